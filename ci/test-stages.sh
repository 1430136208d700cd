#!/usr/bin/env bash
# `make test` after lint: the fast suite and the Kubernetes stage (ci/cluster-stage.sh).
#
# The two ran one after the other: ~10 min of the fast suite, then ~18 min of the stage (node
# up, 31 tests, teardown), ~29.5 min in all. The stage mostly waits (pods starting, Argo's steps
# one after the other behind the node's mutex, fio's runtimes, a CronWorkflow's minute, a
# volume's deadline), so most of the fast suite now runs beside it:
#   1. the fast suite's `quiet` tests, with the machine to itself: they assert on what fio
#      measured (a rate-limited job's IOPS within 3 %, a verdict between two media) or on wall
#      time (a barrier's skew, "stopped at once"). Beside the stage, a fio rate was missed by 3.8 %;
#   2. the Kubernetes stage in the background, and the rest of the fast suite beside it, at the
#      same priority (niced, the suite would get next to nothing while a report step builds its
#      site, and its waits for MinIO, Chromium… have timeouts; the stage's waits are generous).
# The stage's output is kept in a log and printed once the suite is done, then as it comes. A
# failed suite stops the stage (which tears its node down); either failing fails `make test`.
#
# Where the stage cannot run (not root) it says so and `make test` fails, as before; with
# PVBENCH_SKIP_CLUSTER=1 it says it was skipped on purpose. PVBENCH_CLUSTER_BESIDE=0 runs the
# whole fast suite first and then the stage, building the node's images in the background
# meanwhile, niced (`ci/cluster/up.sh --prepare`), as earlier versions did.
set -uo pipefail
cd "$(dirname "$0")/.."
say() { printf '\033[1m[test %s] %s\033[0m\n' "$(date +%H:%M:%S)" "$*" >&2; }
# How much of the machine a phase left idle (/proc/stat, every core's jiffies since a cpu_mark), on
# the phases' lines: where the stage runs alone it mostly waits (pods starting, Argo's steps, fio's
# runtimes, deadlines), and that idle share is what running more of it at once could use.
cpu_mark() { read -r _ u n s i w q sq st _ </proc/stat; echo "$((u + n + s + i + w + q + sq + st)) $((i + w))"; }
idle_since() { # idle_since "$(cpu_mark)" → the idle share since that mark, in %
  local total idle now_total now_idle
  read -r total idle <<<"$1"
  read -r now_total now_idle <<<"$(cpu_mark)"
  echo $(((now_idle - idle) * 100 / (now_total > total ? now_total - total : 1)))
}

# whether the stage can run here at all (else it says why, in make test-cluster)
stage=0; beside=0; prepare=0
if [ "${PVBENCH_SKIP_CLUSTER:-0}" != 1 ] && [ "$(id -u)" = 0 ]; then stage=1; fi
if [ "$stage" = 1 ] && [ "${PVBENCH_CLUSTER_BESIDE:-1}" != 0 ]; then beside=1; fi
if [ "$stage" = 1 ] && [ "${PVBENCH_PREPARE_CLUSTER:-1}" != 0 ]; then prepare=1; fi

BG_PIDS=()
stop_background() {
  local pid
  for pid in "${BG_PIDS[@]}"; do pkill -TERM -s "$pid" 2>/dev/null; done
  for pid in "${BG_PIDS[@]}"; do wait "$pid" 2>/dev/null; done
}
trap 'stop_background; exit 130' INT TERM

# The node's binaries and images (packages, Kubernetes, the runner and report images; nothing
# started), built in the background under the stage's lock (ci/cluster/lib.sh: no other
# checkout's node goes down meanwhile), niced, the image builds' RUN steps at cpu.shares 2
# (up.sh): they take what the tests leave idle, and the stage then finds them built.
prepare_in_background() {
  PREP_LOG=$(mktemp /tmp/pvbench-cluster-prepare.XXXXXX)
  setsid -w flock -w 1800 "$(. ci/cluster/lib.sh && echo "$STAGE_LOCK")" \
    nice -n 19 ionice -c 3 bash ci/cluster/up.sh --prepare >"$PREP_LOG" 2>&1 &
  PREP_PID=$!
  BG_PIDS+=("$PREP_PID")
  say "building the node's binaries and images in the background, niced (log: $PREP_LOG)"
}
PREP_PID=
[ "$prepare" = 0 ] || prepare_in_background

t=$(date +%s); mark=$(cpu_mark)
if [ "$beside" = 1 ]; then
  make --no-print-directory test-fast FAST_MARKS="not cluster and quiet" || { rc=$?; stop_background; exit "$rc"; }
  say "the quiet tests passed in $(( $(date +%s) - t ))s (CPU idle $(idle_since "$mark")%)"
  mark=$(cpu_mark)
  if [ -n "$PREP_PID" ] && kill -0 "$PREP_PID" 2>/dev/null; then
    # the stage waits for it (the lock): from now on it builds at the tests' priority
    pgrep -s "$PREP_PID" | xargs -r renice -n 0 -p >/dev/null 2>&1 || true
    say "the background build goes on at normal priority; the stage starts when it is done"
  fi
  STAGE_LOG=$(mktemp /tmp/pvbench-cluster-stage.XXXXXX)
  # its own session, so that stopping it stops all it started (its trap then tears the node down);
  # setup has run (make test's lint needs it), and the fast suite's own run of it is a no-op; it
  # waits for the background build (PVBENCH_PREPARE_PID) before the lock's 30 min for other stages
  PVBENCH_PREPARE_PID=$PREP_PID PVBENCH_SETUP_DONE=1 setsid -w bash ci/cluster-stage.sh >"$STAGE_LOG" 2>&1 &
  STAGE_PID=$!
  BG_PIDS+=("$STAGE_PID")
  say "the Kubernetes stage runs beside the rest of the fast suite (log: $STAGE_LOG, printed after the suite)"
  make --no-print-directory test-fast FAST_MARKS="not cluster and not quiet"
  rc=$?
else
  make --no-print-directory test-fast
  rc=$?
fi
if [ "$rc" != 0 ]; then
  [ "$beside" = 0 ] || say "the fast suite failed: stopping the Kubernetes stage (it tears its node down)"
  stop_background
  [ "$beside" = 0 ] || tail -n 30 "$STAGE_LOG" >&2
  exit "$rc"
fi

if [ "$beside" = 1 ]; then
  say "the fast suite passed in $(( $(date +%s) - t ))s (CPU idle $(idle_since "$mark")%); the Kubernetes stage so far, then as it goes:"
  alone=$(date +%s); mark=$(cpu_mark)
  tail -n +1 --pid="$STAGE_PID" -f "$STAGE_LOG"
  wait "$STAGE_PID"
  rc=$?
  trap - INT TERM
  say "the Kubernetes stage ended after $(( $(date +%s) - t ))s in all: exit $rc; alone on the machine for its last $(( $(date +%s) - alone ))s, it left the CPU idle $(idle_since "$mark")% of them"
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
trap - INT TERM
exec make --no-print-directory test-cluster
