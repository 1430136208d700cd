#!/usr/bin/env bash
# What pvbench needs on a fresh Debian machine, idempotent (fast when already done), in parts:
#
#   ci/setup.sh           everything `make test`/`make lint` use: the demo's and the cluster's parts,
#                         Chromium (the report's browser tests), the test extras
#   ci/setup.sh demo      what `make demo` uses, nothing else (~minutes on a fresh machine, not ~14):
#                         fio, node/npm, the Python environment (pvbench without extras: the demo
#                         never imports Hera or the test tools), the Evidence project's npm packages
#   ci/setup.sh cluster   the cluster tools (`make setup-cluster`): Go, the Python environment with
#                         Hera (`pvbench argo …`), MinIO, helm/kubeconform, the real Argo engines
#                         (built from the Go module proxy, ~14 min the first time on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '\033[1m==> %s\033[0m\n' "$*"; }

part=${1:-all}
case "$part" in
  all) extras="argo test" ;;
  demo) extras="" ;;
  cluster) extras="argo" ;;
  *) echo "usage: ci/setup.sh [demo|cluster]   (no argument: everything)" >&2; exit 2 ;;
esac
for_part() { [ "$part" = all ] || [[ " $* " == *" $part "* ]]; }  # this run sets up one of these parts

need_apt=()
for_part demo && { command -v fio >/dev/null || need_apt+=(fio); }
[ "$part" = all ] && { command -v chromium >/dev/null || need_apt+=(chromium); }
# a real network filesystem for the shared (ReadWriteMany) tests: OpenSSH's sftp-server, sshfs
[ "$part" = all ] && { command -v sshfs >/dev/null || need_apt+=(sshfs); }
[ "$part" = all ] && { command -v socat >/dev/null || need_apt+=(socat); }
[ "$part" = all ] && { [ -x /usr/lib/openssh/sftp-server ] || need_apt+=(openssh-sftp-server); }
for_part demo && { command -v node >/dev/null || need_apt+=(nodejs npm); }
for_part cluster && { command -v go >/dev/null || need_apt+=(golang-go); }
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
if for_part demo && [ -f ci/install-report.sh ]; then
  REPORT_LOG=$(mktemp)
  setsid -w bash ci/install-report.sh >"$REPORT_LOG" 2>&1 &  # a process group of its own: npm and all
  REPORT_PID=$!
  trap 'kill -- "-$REPORT_PID" 2>/dev/null || true; rm -f "$REPORT_LOG"' EXIT  # a failed step above: npm stops too
fi

# The venv's extras: .venv/.extras names those installed (a venv of an earlier setup.sh, which
# has .installed only, has both); a part that wants one more installs again, keeping the others.
have=""
if [ -f .venv/.installed ]; then have=$(cat .venv/.extras 2>/dev/null || echo "argo test"); fi
missing=""
for e in $extras; do [[ " $have " == *" $e "* ]] || missing="$missing $e"; done
if [ ! -x .venv/bin/pvbench ] || [ sdk/pyproject.toml -nt .venv/.installed ] || [ -n "$missing" ]; then
  all_extras=$(printf '%s\n' $have $extras | sort -u | xargs)
  log "python: .venv with pvbench and its pinned dependencies${all_extras:+ (extras: $all_extras)}"
  python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e "sdk${all_extras:+[${all_extras// /,}]}"
  echo "$all_extras" >.venv/.extras
  touch .venv/.installed
fi

if for_part cluster; then
  log "minio";  bash ci/install-minio.sh
  if [ -f ci/install-tools.sh ]; then log "helm, kubeconform"; bash ci/install-tools.sh; fi
  log "argo engines (workflow-controller, argoexec, argo, argo-events, nats-server)"; bash ci/install-argo.sh
fi
if [ -n "$REPORT_LOG" ]; then
  log "evidence report"
  report_rc=0
  wait "$REPORT_PID" || report_rc=$?
  trap - EXIT
  cat "$REPORT_LOG"
  rm -f "$REPORT_LOG"
  [ "$report_rc" = 0 ] || { echo "ci/install-report.sh failed (exit $report_rc)" >&2; exit "$report_rc"; }
fi
log "setup done ($part)"
