#!/usr/bin/env bash
# Everything pvbench needs on a fresh Debian machine, idempotent (fast when already done):
# Debian packages, the Python environment, MinIO, helm/kubeconform, the real Argo engines
# (built from the Go module proxy), the Evidence project.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '\033[1m==> %s\033[0m\n' "$*"; }

need_apt=()
command -v fio >/dev/null || need_apt+=(fio)
command -v chromium >/dev/null || need_apt+=(chromium)
command -v node >/dev/null || need_apt+=(nodejs npm)
command -v go >/dev/null || need_apt+=(golang-go)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  log "apt: ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

# The Evidence project's npm packages install beside the Python environment (a fresh clone: ~35 s
# of npm beside ~55 s of pip, mostly downloads from the caches and disk); its output is shown after.
REPORT_LOG=""
if [ -f ci/install-report.sh ]; then
  REPORT_LOG=$(mktemp)
  setsid -w bash ci/install-report.sh >"$REPORT_LOG" 2>&1 &  # a process group of its own: npm and all
  REPORT_PID=$!
  trap 'kill -- "-$REPORT_PID" 2>/dev/null || true; rm -f "$REPORT_LOG"' EXIT  # a failed step above: npm stops too
fi

if [ ! -x .venv/bin/pvbench ] || [ sdk/pyproject.toml -nt .venv/.installed ]; then
  log "python: .venv with pvbench and its pinned dependencies"
  python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e "sdk[argo,test]"
  touch .venv/.installed
fi

log "minio";  bash ci/install-minio.sh
if [ -f ci/install-tools.sh ]; then log "helm, kubeconform"; bash ci/install-tools.sh; fi
log "argo engines (workflow-controller, argoexec, argo, argo-events, nats-server)"; bash ci/install-argo.sh
if [ -n "$REPORT_LOG" ]; then
  log "evidence report"
  report_rc=0
  wait "$REPORT_PID" || report_rc=$?
  trap - EXIT
  cat "$REPORT_LOG"
  rm -f "$REPORT_LOG"
  [ "$report_rc" = 0 ] || { echo "ci/install-report.sh failed (exit $report_rc)" >&2; exit "$report_rc"; }
fi
log "setup done"
