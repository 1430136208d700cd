#!/usr/bin/env bash
# `make test` after lint: the fast suite, then the Kubernetes stage (ci/cluster-stage.sh).
#
# The fast suite keeps both cores ~90% busy for ~8 min; building what the node needs (packages,
# the Kubernetes binaries, the runner and report images: ~5 min after a code change, ~13 on a
# fresh machine) is partly downloads and disk. So that build runs in the background while the
# suite runs (`ci/cluster/up.sh --prepare`, cached by content), at the lowest CPU priority: nice
# 19, and the image builds' RUN steps, which run in their own cgroup, at cpu.shares 2 (up.sh).
# It takes what the suite leaves idle and finishes at full speed once the suite is done; the
# cluster stage then finds everything built. Where the stage cannot run (not root,
# PVBENCH_SKIP_CLUSTER=1) or PVBENCH_PREPARE_CLUSTER=0, nothing starts early.
set -uo pipefail
cd "$(dirname "$0")/.."
say() { printf '\033[1m[test %s] %s\033[0m\n' "$(date +%H:%M:%S)" "$*" >&2; }

PREP_PID=
if [ "${PVBENCH_SKIP_CLUSTER:-0}" != 1 ] && [ "${PVBENCH_PREPARE_CLUSTER:-1}" != 0 ] && [ "$(id -u)" = 0 ]; then
  PREP_LOG=$(mktemp /tmp/pvbench-cluster-prepare.XXXXXX)
  # under the cluster stage's lock (ci/cluster/lib.sh: no other checkout's node goes down
  # meanwhile); its own session, so that stopping it stops all it started
  setsid -w flock -w 1800 "$(. ci/cluster/lib.sh && echo "$STAGE_LOCK")" \
    nice -n 19 ionice -c 3 bash ci/cluster/up.sh --prepare >"$PREP_LOG" 2>&1 &
  PREP_PID=$!
  say "building the node's binaries and images in the background, niced (log: $PREP_LOG)"
fi
stop_prepare() { if [ -n "$PREP_PID" ]; then pkill -TERM -s "$PREP_PID" 2>/dev/null; wait "$PREP_PID" 2>/dev/null; fi; }
trap 'stop_prepare; exit 130' INT TERM

make --no-print-directory test-fast
rc=$?
if [ "$rc" != 0 ]; then
  stop_prepare
  exit "$rc"
fi
if [ -n "$PREP_PID" ]; then
  t=$(date +%s)
  if wait "$PREP_PID"; then
    say "the background build had $(( $(date +%s) - t ))s left after the fast suite: $(tail -1 "$PREP_LOG")"
  else  # not fatal here: up.sh builds again in the stage, and its error is the one to read
    say "the background build failed (the cluster stage builds again): $(tail -3 "$PREP_LOG" | tr '\n' ' ')"
  fi
fi
exec make --no-print-directory test-cluster
