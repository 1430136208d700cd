# Shared settings of ci/cluster/{up,down}.sh. Sourced, not run.
# Every path and port can be overridden from the environment; the defaults keep all
# state of the node in three places: the cache (survives down.sh), the state dir and
# /run/pvbench-cluster (both removed by down.sh), and the log dir (kept for failures).

K8S_VERSION=v1.31.4
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$REPO/ci/cluster

CACHE=${PVBENCH_CLUSTER_CACHE:-/var/cache/pvbench-cluster}   # binaries, images, Go caches
STATE=${PVBENCH_CLUSTER_STATE:-/var/lib/pvbench-cluster}     # certs, etcd, kubelet, media
RUNDIR=${PVBENCH_CLUSTER_RUN:-/run/pvbench-cluster}          # sockets, pid files, containerd state
LOG_ROOT=${PVBENCH_CLUSTER_LOGS:-/var/log/pvbench-cluster}   # one directory per up.sh run
# One node per machine: ci/cluster-stage.sh holds this lock, and so does the background build of
# ci/test-stages.sh (another checkout's down.sh would unmount buildah's mounts under it).
STAGE_LOCK=/run/pvbench-cluster-stage.lock
KUBECONFIG_PATH=${PVBENCH_KUBECONFIG:-$STATE/kubeconfig}     # admin kubeconfig (cluster-admin)

# The pod network: one bridge with a /24; its first address is the host side, where the
# API server (and the tests' MinIO) listen, so pods reach them without kube-proxy.
BRIDGE=${PVBENCH_CLUSTER_BRIDGE:-pvbench0}
POD_NET=${PVBENCH_CLUSTER_POD_NET:-10.244.0}                 # first three octets of a /24
GATEWAY=$POD_NET.1
API_PORT=${PVBENCH_CLUSTER_API_PORT:-6443}
API_SERVER=https://$GATEWAY:$API_PORT
ETCD_PORT=${PVBENCH_CLUSTER_ETCD_PORT:-23790}
ETCD_PEER_PORT=$((ETCD_PORT + 10))
SERVICE_CIDR=10.96.0.0/16
API_SERVICE_IP=10.96.0.1   # the `kubernetes` Service: what in-cluster clients (Argo's executor) dial
NFT_TABLE=pvbench          # `ip pvbench`: the DNAT that stands in for kube-proxy for that one Service
NATS_PORT=${PVBENCH_CLUSTER_NATS_PORT:-4222}   # the EventBus (JetStream) on $GATEWAY
NODE_NAME=localhost   # a loopback node IP is refused; the apiserver reaches the kubelet by this name

# Two nodes on this one machine, so that node selections, the per-node mutex and multi-client
# cells spreading their clients meet more than one node (PVBENCH_CLUSTER_NODES=1: the first only).
# Node 2 is a second kubelet with a containerd, root dir, cgroup root, pod bridge and /24 of its
# own; both see the same media. Its name is its address: every 127/8 address is this host's
# loopback, the kubelet takes an IP-shaped name for its InternalIP (a loopback one is refused
# only when looked up), and the API server dials it by that name with no /etc/hosts entry.
NODES=${PVBENCH_CLUSTER_NODES:-2}
NODE2_NAME=127.0.0.2
NODE_LABEL=pvbench.io/ci-node   # =1, =2: the tests pin a node by it (also kubernetes.io/hostname)

# The project's venv (Hera, for the CRDs); ci/setup.sh makes it.
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3

BIN=$CACHE/bin/$K8S_VERSION
PKI=$STATE/pki
MEDIA=$STATE/media
MEDIA_SIZE=${PVBENCH_CLUSTER_MEDIA_SIZE:-4G}                 # each loop-device file (sparse)
TMPFS_SIZE=${PVBENCH_CLUSTER_TMPFS_SIZE:-3G}
QOS_BACKING=$MEDIA/qos-backing                               # a tmpfs holding pvbench-qos's image
QOS_MEDIA_SIZE=${PVBENCH_CLUSTER_QOS_SIZE:-1G}
SHARED_EXPORT=$MEDIA/ext4/shared-export  # what the SFTP server serves
SHARED_MOUNT=$STATE/shared               # its sshfs mount on the host: pvbench-shared's volumes
LOCAL_PATH_DIR=$MEDIA/xfs/local-path      # local-path's volumes

media_image() {  # fs: the file behind that medium's loop device
  if [ "$1" = qos ]; then echo "$QOS_BACKING/qos.img"; else echo "$MEDIA/$1.img"; fi
}

# Storage classes: name -> medium. Every class is provisioned by ci/cluster/provisioner.py.
# pvbench-qos is ext4 too, on a loop device of its own: the class whose driver the upgrade test
# changes (sdk/tests/test_cluster_upgrade.py).
STORAGE_CLASSES=(pvbench-ext4 pvbench-xfs pvbench-tmpfs pvbench-qos)
PROVISIONER_NAME=pvbench.io/local-media
# A provisioner that is not ours: rancher's local-path-provisioner (k3s' and kind's `local-path`),
# built from the Go module proxy, run on the host with the admin kubeconfig. It serves `local-path`
# (a directory per volume on the XFS medium, ReadWriteOnce) and `pvbench-shared` (a directory per
# volume on a network filesystem both nodes mount: ReadWriteMany).
LOCAL_PATH_VERSION=v0.0.30
LOCAL_PATH_MODULE=github.com/rancher/local-path-provisioner
LOCAL_PATH_BIN=$CACHE/bin/local-path-provisioner-$LOCAL_PATH_VERSION
LOCAL_PATH_NAMESPACE=local-path-storage
LOCAL_PATH_CLASS=local-path
SHARED_CLASS=pvbench-shared
# The network filesystem: OpenSSH's sftp-server over TCP (socat, one server per connection) on
# the ext4 medium, mounted with sshfs (FUSE). This kernel has neither an NFS client nor nfsd.
SFTP_PORT=${PVBENCH_CLUSTER_SFTP_PORT:-2222}
SFTP_SERVER=/usr/lib/openssh/sftp-server

# argo-server's Content-Security-Policy for artifact files, as docs/kubernetes.md recommends it
# for opening reports in the Argo UI: the report's own scripts, WebAssembly (DuckDB) and workers
# may run; nothing may be fetched from elsewhere.
ARTIFACT_CSP="sandbox allow-same-origin allow-scripts allow-popups allow-forms; base-uri 'self'; default-src 'self'; script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; worker-src 'self' blob:; connect-src 'self' blob: data:; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; font-src 'self' data:"

# Images the chart and the tests use (tags as in charts/pvbench/values.yaml).
RUNNER_IMAGE=${PVBENCH_RUNNER_IMAGE:-ghcr.io/pvbench/pvbench-runner:0.1.0}
REPORT_IMAGE=${PVBENCH_REPORT_IMAGE:-ghcr.io/pvbench/pvbench-report:0.1.0}
PAUSE_IMAGE=pvbench.local/pause:3.10
BUILD_REPORT_IMAGE=${PVBENCH_CLUSTER_REPORT_IMAGE:-1}        # 0 skips the (big) report image

# The real Argo engines (ci/install-argo.sh builds them from the Go module proxy). Their
# images carry the upstream names and tags, so the upstream install manifests run unchanged
# but for the image pull policy (no registry here).
# PVBENCH_ARGO_WORKFLOWS_VERSION picks one of the versions ci/install-argo.sh builds: v4.0.5 (the
# default: what a new user installs) or v3.7.18 (ci/cluster-stage.sh runs a subset on it).
TOOLS=${PVBENCH_TOOLS:-$REPO/.tools}
ARGO_MANIFESTS=$TOOLS/argo/manifests
ARGO_WORKFLOWS_VERSION=${PVBENCH_ARGO_WORKFLOWS_VERSION:-v4.0.5}
ARGO_WORKFLOWS_BIN=$TOOLS/argo/$ARGO_WORKFLOWS_VERSION/bin
ARGO_WORKFLOWS_MANIFESTS=$TOOLS/argo/$ARGO_WORKFLOWS_VERSION/manifests
ARGO_EVENTS_VERSION=v1.9.11
CONTROLLER_IMAGE=quay.io/argoproj/workflow-controller:$ARGO_WORKFLOWS_VERSION
EXECUTOR_IMAGE=quay.io/argoproj/argoexec:$ARGO_WORKFLOWS_VERSION
ARGOCLI_IMAGE=quay.io/argoproj/argocli:$ARGO_WORKFLOWS_VERSION
EVENTS_IMAGE=quay.io/argoproj/argo-events:$ARGO_EVENTS_VERSION

# Host settings the kubelet (and the CNI bridge plugin) change; down.sh puts them back.
HOST_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward)

log() { printf '\033[1m[cluster %s] %s\033[0m\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '\033[1;31m[cluster] %s\033[0m\n' "$*" >&2; exit 1; }

# kubectl against the node, as cluster-admin.
k() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_PATH" "$@"; }

# Node n's settings, as N_* variables (node 1 keeps the names it had as the only node).
#   node_env 1|2
node_env() {
  N=$1
  local s=; [ "$N" = 1 ] || s=$N
  N_SFX=$s
  if [ "$N" = 1 ]; then N_NAME=$NODE_NAME N_ADDR=127.0.0.1 N_CGROUP_ROOT=/; else N_NAME=$NODE2_NAME N_ADDR=$NODE2_NAME N_CGROUP_ROOT=/pvbench-node$N; fi
  N_BRIDGE=$BRIDGE; [ "$N" = 1 ] || N_BRIDGE=${BRIDGE%0}$((N - 1))   # pvbench0, pvbench1
  N_NET=${POD_NET%.*}.$(( ${POD_NET##*.} + N - 1 ))     # 10.244.0, 10.244.1
  N_GATEWAY=$N_NET.1
  N_SOCK=$RUNDIR/containerd$s.sock
  N_CTR_ROOT=$CACHE/containerd$s   # images stay imported from one node to the next
  N_CNI=$STATE/cni$s
  N_KUBELET_DIR=$STATE/kubelet$s
}
POD_SUPERNET=${POD_NET%.*}.0.0/16   # every node's /24: pods route it through their bridge's gateway

running() {  # pid: is it running? An exited process (a zombie, state Z) is not: it only waits
  # for its reaper, and the daemons' reaper is PID 1, which on some machines (this one's
  # firecracker init) takes 1-2 s: `kill -0` alone made each stop_pid wait that long
  local stat
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  stat=${stat##*) }
  [ "${stat%% *}" != Z ]
}

pid_alive() {  # name: is the process of $RUNDIR/name.pid running?
  local f=$RUNDIR/$1.pid
  [ -s "$f" ] && running "$(cat "$f")"
}

stop_pid() {  # name [timeout]: TERM the recorded process (and its process group), then KILL
  local f=$RUNDIR/$1.pid t=${2:-20} pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  if running "$pid"; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq "$((t * 5))"); do running "$pid" || break; sleep 0.2; done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}
