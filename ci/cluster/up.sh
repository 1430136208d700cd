#!/usr/bin/env bash
# Bring up a real two-node Kubernetes (v1.31.4) on this machine, for pvbench's CI.
#
#   sudo ci/cluster/up.sh          # idempotent: a healthy node is reused as it is
#   sudo ci/cluster/up.sh --prepare   # only build/cache what the node needs (no node)
#   export KUBECONFIG=/var/lib/pvbench-cluster/kubeconfig
#   ci/cluster/down.sh             # removes the node and restores every host change
#
# What it does (details and the reasons in ci/cluster/README.md):
#   Debian packages (containerd, runc, CNI plugins, etcd, buildah, debootstrap, xfsprogs);
#   Kubernetes binaries built from the Go module proxy (cached); a static pause image;
#   the runner and report images built with buildah from the project's own Dockerfiles on
#   base images made locally with debootstrap (cached by content); etcd, containerd,
#   kube-apiserver, kube-controller-manager, kube-scheduler and two kubelets (two nodes, each
#   with its own containerd and pod bridge) as host processes; pod bridges whose host addresses
#   serve the API and route between the nodes; storage classes
#   on different real media (ext4 and XFS on loop devices, tmpfs) with a small provisioner;
#   the Argo CRDs generated from the schemas the tests validate with.
# Exit codes: 0 up; 1 failed (logs: see the message); 3 this machine cannot host a node.
set -eEuo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

T0=$(date +%s)
PREPARE_ONLY=0; [ "${1:-}" = --prepare ] && PREPARE_ONLY=1
BUILD_CPU=  # extra `buildah build` options: --prepare lowers its RUN steps' CPU weight
STAMP=$(date +%Y%m%d-%H%M%S)
if [ "$PREPARE_ONLY" = 1 ]; then LOGDIR=$LOG_ROOT/$STAMP-prepare; else LOGDIR=$LOG_ROOT/$STAMP; fi
mkdir -p "$LOGDIR" "$CACHE" "$RUNDIR"
[ "$PREPARE_ONLY" = 1 ] || ln -sfn "$LOGDIR" "$LOG_ROOT/latest"
# keep the last 8 runs' logs
ls -1d "$LOG_ROOT"/2* 2>/dev/null | head -n -8 | xargs -r rm -rf

STEP=start
on_error() {
  local rc=$?
  printf '\033[1;31m[cluster] up.sh failed in step "%s" (exit %s). Logs: %s\033[0m\n' "$STEP" "$rc" "$LOGDIR" >&2
  # the logs written last are the ones that tell
  for f in $(ls -1t "$LOGDIR"/*.log 2>/dev/null | head -3); do
    echo "----- last lines of $f" >&2
    tail -n 20 "$f" | cut -c1-400 >&2
  done
  echo "----- all logs: $(ls "$LOGDIR" | tr '\n' ' ')" >&2
  exit "$rc"
}
trap on_error ERR

step() { STEP=$1; log "$1"; }

# ------------------------------------------------------------------ can this machine host it?
preflight() {
  local why=()
  [ "$(id -u)" -eq 0 ] || why+=("not root (needs mounts, loop devices, cgroups, network)")
  [ -e /dev/loop-control ] || why+=("no /dev/loop-control (loop devices for the ext4/XFS media)")
  [ -d /sys/fs/cgroup ] || why+=("no /sys/fs/cgroup")
  grep -qw overlay /proc/filesystems 2>/dev/null || modprobe overlay 2>/dev/null || why+=("no overlay filesystem (containerd snapshotter)")
  grep -qw xfs /proc/filesystems 2>/dev/null || modprobe xfs 2>/dev/null || why+=("no XFS in the kernel")
  command -v apt-get >/dev/null || why+=("not a Debian-like system (apt-get missing)")
  if [ ${#why[@]} -gt 0 ]; then
    printf '\033[1;31m[cluster] this machine cannot host the Kubernetes node:\033[0m\n' >&2
    printf '  - %s\n' "${why[@]}" >&2
    exit 3
  fi
}

# ------------------------------------------------------------------ packages and binaries
packages() {
  local need=()
  command -v containerd >/dev/null || need+=(containerd)
  command -v runc >/dev/null || need+=(runc)
  [ -x /usr/lib/cni/bridge ] || need+=(containernetworking-plugins)
  command -v etcd >/dev/null || need+=(etcd-server)
  command -v buildah >/dev/null || need+=(buildah)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v mkfs.xfs >/dev/null || need+=(xfsprogs)
  command -v openssl >/dev/null || need+=(openssl)
  command -v losetup >/dev/null || need+=(mount)
  command -v nft >/dev/null || need+=(nftables)
  command -v sshfs >/dev/null || need+=(sshfs)      # the shared (RWX) class's network filesystem
  command -v socat >/dev/null || need+=(socat)
  [ -x "$SFTP_SERVER" ] || need+=(openssh-sftp-server)
  [ ${#need[@]} -eq 0 ] && return
  log "apt-get install ${need[*]}"
  apt-get update -qq >"$LOGDIR/apt.log" 2>&1
  # containerd/etcd packages would start services where systemd runs; we run our own.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >>"$LOGDIR/apt.log" 2>&1
}

go_env() {
  export PATH=/usr/local/go/bin:$PATH GOFLAGS=-mod=readonly CGO_ENABLED=0
  export GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build GONOSUMDB=k8s.io
  command -v go >/dev/null || die "go is not installed (ci/setup.sh installs it)"
  local v; v=$(go env GOVERSION | sed 's/^go//')
  # The module says go 1.22.0: an older local go fetches that toolchain through the proxy.
  if [ "$(printf '%s\n1.22.0\n' "$v" | sort -V | head -1)" = "1.22.0" ]; then export GOTOOLCHAIN=local; else export GOTOOLCHAIN=go1.22.12; fi
}

binaries_ok() {
  local stamp; stamp=$(cat "$HERE/k8s/go.mod" "$HERE/k8s/go.sum" "$HERE/pause/pause.go" | sha256sum | cut -c1-16)
  [ "$(cat "$BIN/.stamp" 2>/dev/null)" = "$stamp" ] && [ -x "$LOCAL_PATH_BIN" ] && echo ok
}

# rancher's local-path-provisioner at $LOCAL_PATH_VERSION, from its module zip (its vendor/ holds
# only modules.txt, so its dependencies come from the proxy, checked against its go.sum)
build_local_path() {
  [ -x "$LOCAL_PATH_BIN" ] && return
  local dir src=$CACHE/src/local-path-provisioner-$LOCAL_PATH_VERSION
  dir=$(cd / && GOFLAGS=-mod=mod go mod download -json "$LOCAL_PATH_MODULE@$LOCAL_PATH_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || die "go mod download $LOCAL_PATH_MODULE@$LOCAL_PATH_VERSION gave no directory"
  rm -rf "$src" && mkdir -p "$(dirname "$src")" && cp -r "$dir" "$src" && chmod -R u+w "$src" && rm -rf "$src/vendor"
  (cd "$src" && GOFLAGS=-mod=mod GONOSUMDB='*' GOTOOLCHAIN=local go build -trimpath -ldflags '-s -w' \
      -gcflags=all=-dwarf=false -o "$LOCAL_PATH_BIN.tmp" .)
  mv "$LOCAL_PATH_BIN.tmp" "$LOCAL_PATH_BIN" && rm -rf "$src"
}

build_binaries() {  # runs in the background while images build
  go_env
  local stamp; stamp=$(cat "$HERE/k8s/go.mod" "$HERE/k8s/go.sum" "$HERE/pause/pause.go" | sha256sum | cut -c1-16)
  mkdir -p "$BIN"
  if [ "$(cat "$BIN/.stamp" 2>/dev/null)" = "$stamp" ]; then build_local_path; return; fi
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1"
  ld="$ld -X k8s.io/component-base/version.gitMinor=31 -X k8s.io/component-base/version.gitTreeState=clean"
  ld="$ld -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitCommit=pvbench-gomod"
  # no debug information, ~10% less compiling (ci/install-minio.sh)
  (cd "$HERE/k8s" && go build -trimpath -ldflags "$ld" -gcflags=all=-dwarf=false -o "$BIN/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
      k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubectl)
  (cd "$HERE/pause" && GOFLAGS= go build -trimpath -ldflags '-s -w' -o "$BIN/pause" pause.go)
  build_local_path
  echo "$stamp" >"$BIN/.stamp"
}

# ------------------------------------------------------------------ images
full_ref() {  # an image name as containerd/buildah store it (docker.io/library/... for short names)
  local first=${1%%/*}
  case $1 in
    */*) case $first in *.*|*:*|localhost) echo "$1" ;; *) echo "docker.io/$1" ;; esac ;;
    *) echo "docker.io/library/$1" ;;
  esac
}

# buildah with its storage in the cache, and its CNI config dir there too (buildah would
# otherwise create /etc/cni/net.d on the host, even for `from` and with host networking), and
# its temporary files: they hold the Dockerfiles' RUN --mount=type=cache directories (the report
# image's compiled bundles, kept from one build to the next), which would be in /var/tmp
B() {
  if [ ! -s "$CACHE/buildah/containers.conf" ]; then
    mkdir -p "$CACHE/buildah/cni"
    printf '[network]\nnetwork_config_dir = "%s"\n' "$CACHE/buildah/cni" >"$CACHE/buildah/containers.conf"
  fi
  mkdir -p "$CACHE/buildah/tmp"
  TMPDIR=$CACHE/buildah/tmp CONTAINERS_CONF=$CACHE/buildah/containers.conf \
    buildah --root "$CACHE/buildah/root" --runroot "$RUNDIR/buildah" --storage-driver overlay "$@"
}

minbase_rootfs() {  # a cached debootstrap (bookworm, minbase) tarball
  local tar=$CACHE/rootfs/bookworm-minbase.tar
  [ -s "$tar" ] && { echo "$tar"; return; }
  local dir=$CACHE/rootfs/minbase.tmp
  rm -rf "$dir"; mkdir -p "$dir"
  log "debootstrap bookworm (minbase) -> $tar" 
  debootstrap --variant=minbase --include=ca-certificates bookworm "$dir" http://deb.debian.org/debian >"$LOGDIR/debootstrap.log" 2>&1
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
  tar -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
  rm -rf "$dir"
  echo "$tar"
}

# A base image made locally from the debootstrap rootfs, tagged as the Dockerfile's FROM.
#   base_image NAME KIND    KIND: python (python:3.11-slim-bookworm) | node (node:20-bookworm-slim)
base_image() {
  local name=$1 kind=$2 tar; tar=$(minbase_rootfs)
  local key; key=$( (echo "$kind"; sha256sum "$tar" | cut -c1-16; ls /usr/local/share/ca-certificates/ 2>/dev/null; \
    if [ "$kind" = node ]; then node --version; fi) | sha256sum | cut -c1-16)
  if B inspect --type image "$name" 2>/dev/null | grep -q "\"pvbench.base-key\": \"$key\""; then return; fi
  log "base image $name (debootstrap rootfs + $kind)"
  local dir=$CACHE/rootfs/$kind.tmp
  rm -rf "$dir"; mkdir -p "$dir"; tar -C "$dir" -xf "$tar"
  # This machine reaches registries through an egress proxy with its own CA: builds inside
  # the image need it too (a no-op where /usr/local/share/ca-certificates is empty).
  cp /usr/local/share/ca-certificates/*.crt "$dir/usr/local/share/ca-certificates/" 2>/dev/null || true
  cp /etc/resolv.conf "$dir/etc/resolv.conf"
  case $kind in
    python)
      chroot "$dir" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3 python3-pip python3-venv >/dev/null && update-ca-certificates >/dev/null' \
        >>"$LOGDIR/base-images.log" 2>&1
      # As the python image: `python`, `pip` on PATH and pip may install system-wide.
      ln -sf python3 "$dir/usr/bin/python"
      rm -f "$dir"/usr/lib/python3*/EXTERNALLY-MANAGED
      ;;
    node)
      chroot "$dir" update-ca-certificates >>"$LOGDIR/base-images.log" 2>&1
      # As the node image: node and npm under /usr/local (the same build of Node 20 as the host's).
      mkdir -p "$dir/usr/local/bin" "$dir/usr/local/lib/node_modules" "$dir/usr/local/etc"
      cp "$(command -v node)" "$dir/usr/local/bin/node"
      cp -a /usr/lib/node_modules/npm "$dir/usr/local/lib/node_modules/npm"
      ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$dir/usr/local/bin/npm"
      ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$dir/usr/local/bin/npx"
      echo "cafile=/etc/ssl/certs/ca-certificates.crt" >"$dir/usr/local/etc/npmrc"
      ;;
  esac
  rm -rf "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/archives/*.deb
  : >"$dir/etc/resolv.conf"
  local c; c=$(B from --name "pvbench-base-$kind" scratch 2>/dev/null || { B rm "pvbench-base-$kind" >/dev/null 2>&1; B from --name "pvbench-base-$kind" scratch; })
  B add "$c" "$dir" / >>"$LOGDIR/base-images.log" 2>&1 || {
    # buildah add of a directory copies its content
    die "buildah add of the $kind rootfs failed"; }
  B config --env PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin --env LANG=C.UTF-8 \
    --label "pvbench.base-key=$key" --label "pvbench.base=debootstrap bookworm minbase + $kind" "$c"
  if [ "$kind" = python ]; then B config --cmd python3 "$c"; fi
  if [ "$kind" = node ]; then B config --cmd node --env NODE_VERSION="$(node --version | tr -d v)" "$c"; fi
  B commit --rm "$c" "$name" >>"$LOGDIR/base-images.log" 2>&1
  rm -rf "$dir"
}

# The build context: what a fresh clone has (tracked and untracked-but-not-ignored files) of
# the paths the Dockerfile COPYs; nothing else is read by the build, so the image is the
# same as from the whole repository, without sending hundreds of MB of context.
#   build_context OUT PATH...
build_context() {
  local out=$1; shift
  rm -rf "$out"; mkdir -p "$out"
  # nor what .dockerignore leaves out (node_modules, build output, sdk/tests…): the build would not
  # see it, and in the image's key sdk/tests rebuilt both images after a change to the tests alone
  local ignored=() pattern
  while IFS= read -r pattern; do
    pattern=${pattern%%#*}; pattern=${pattern%"${pattern##*[![:space:]]}"}; pattern=${pattern%/}
    [ -n "$pattern" ] && ignored+=(":(exclude,glob)$pattern" ":(exclude,glob)$pattern/**")
  done <"$REPO/.dockerignore"
  (cd "$REPO" && git ls-files -co --exclude-standard -z -- "$@" "${ignored[@]}") |
    "$PYTHON" -c '
import os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
for rel in sys.stdin.buffer.read().decode().split("\0"):
    p = os.path.join(src, rel)
    if rel and os.path.isfile(p) and not os.path.islink(p):
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy2(p, os.path.join(dst, rel))
' "$REPO" "$out"
}

# Build IMAGE from DOCKERFILE unless the cached archive matches the Dockerfile and what it COPYs.
project_image() {
  local image=$1 dockerfile=$2
  [ -f "$REPO/$dockerfile" ] || die "$dockerfile is missing"
  # Its FROM, made here (no registry): python:* and node:* have a local recipe.
  local base kind; base=$(awk 'toupper($1)=="FROM" {print $2; exit}' "$REPO/$dockerfile")
  case ${base%%:*} in
    python) kind=python ;; node) kind=node ;;
    *) die "$dockerfile: no local recipe for its base image $base (see base_image in up.sh)" ;;
  esac
  base=$(full_ref "$base")
  local ctx=$CACHE/context/$(basename "$(dirname "$dockerfile")")
  local srcs; srcs=$(awk 'toupper($1)=="COPY" {for (i=2;i<NF;i++) if ($i !~ /^--/) print $i}' "$REPO/$dockerfile")
  # shellcheck disable=SC2086
  build_context "$ctx" $srcs
  mkdir -p "$ctx/$(dirname "$dockerfile")"; cp "$REPO/$dockerfile" "$ctx/$dockerfile"
  if [ -f "$REPO/.dockerignore" ]; then cp "$REPO/.dockerignore" "$ctx/"; fi  # buildah applies it
  local key; key=$( (cat "$REPO/$dockerfile"; cd "$ctx" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16)
  local name; name=$(echo "$image" | tr '/:' '__')
  local archive=$CACHE/images/$name-$key.tar
  if [ ! -s "$archive" ]; then
    base_image "$base" "$kind"
    log "buildah build -f $dockerfile -t $image (context: a clean copy of the repo)"
    # --cni-config-dir: buildah would otherwise create /etc/cni/net.d even with host networking
    # shellcheck disable=SC2086
    B build --layers --pull=never --network host --cni-config-dir "$CACHE/buildah/cni" --isolation oci $BUILD_CPU \
      -f "$ctx/$dockerfile" -t "$image" "$ctx" \
      >"$LOGDIR/build-$name.log" 2>&1
    mkdir -p "$CACHE/images"; rm -f "$CACHE/images/$name"-*.tar
    B push "$image" "docker-archive:$archive.tmp:$image" >>"$LOGDIR/build-$name.log" 2>&1
    mv "$archive.tmp" "$archive"
    # the image this tag had before is dangling now: its layers (~1 GB a build) would pile up in
    # the cache until the kubelet sees disk pressure and schedules nothing (seen: 24 GB, a node
    # whose workflow-controller stayed Pending). The tagged images keep the build cache.
    B rmi --prune >>"$LOGDIR/build-$name.log" 2>&1 || true
  fi
  echo "$archive"
}

pause_image() {
  local archive=$CACHE/images/pause-$(sha256sum "$BIN/pause" | cut -c1-16).tar
  if [ ! -s "$archive" ]; then
    local c; c=$(B from scratch)
    B copy "$c" "$BIN/pause" /pause >/dev/null
    B config --entrypoint '["/pause"]' --user 65535:65535 "$c"
    B commit --rm "$c" "$PAUSE_IMAGE" >/dev/null 2>&1
    mkdir -p "$CACHE/images"; rm -f "$CACHE"/images/pause-*.tar
    B push "$PAUSE_IMAGE" "docker-archive:$archive:$PAUSE_IMAGE" >/dev/null 2>&1
  fi
  echo "$archive"
}

# An image holding one static binary of the real Argo engines (ci/install-argo.sh), tagged
# with its upstream name so that the upstream manifests find it: no registry here.
#   engine_image IMAGE BINARY [zoneinfo]   (zoneinfo: the controller's CronWorkflow timezones)
engine_image() {
  local image=$1 binary=$2 extra=${3:-} src=$ARGO_WORKFLOWS_BIN/$2
  [ "$binary" = argo-events ] && src=$TOOLS/bin/$binary
  [ -x "$src" ] || die "$src is missing: ci/install-argo.sh builds it (ci/setup.sh runs it)"
  local key; key=$( (sha256sum "$src" | cut -c1-64; echo "$extra skel-2") | sha256sum | cut -c1-16)
  local name; name=$(echo "$image" | tr '/:' '__')
  local archive=$CACHE/images/$name-$key.tar
  if [ ! -s "$archive" ]; then
    # what upstream's images have besides the binary: a writable /tmp (argoexec stages resource
    # manifests there) and CA certificates (S3 over TLS)
    local skel=$CACHE/rootfs/engine-skel
    rm -rf "$skel"; mkdir -p "$skel/tmp" "$skel/etc/ssl/certs"; chmod 1777 "$skel/tmp"
    cp /etc/ssl/certs/ca-certificates.crt "$skel/etc/ssl/certs/"
    local c; c=$(B from scratch)
    B copy "$c" "$skel" / >/dev/null
    B copy "$c" "$src" "/bin/$binary" >/dev/null
    if [ "$extra" = zoneinfo ]; then B copy "$c" /usr/share/zoneinfo /usr/share/zoneinfo >/dev/null; fi
    # as upstream's images: the binary is the entrypoint, a non-root numeric user
    B config --entrypoint "[\"/bin/$binary\"]" --env PATH=/bin --user 8737:8737 "$c"
    B commit --rm "$c" "$image" >/dev/null 2>&1
    mkdir -p "$CACHE/images"; rm -f "$CACHE/images/$name"-*.tar
    B push "$image" "docker-archive:$archive.tmp:$image" >/dev/null 2>&1
    mv "$archive.tmp" "$archive"
  fi
  echo "$archive"
}

import_image() {  # socket archive image: into that containerd's k8s.io namespace unless already there
  local sock=$1 archive=$2 image=$3 want
  want=$(basename "$archive" .tar)
  if ctr -a "$sock" -n k8s.io images ls -q "labels.\"pvbench.archive\"==$want" 2>/dev/null | grep -q .; then
    return
  fi
  ctr -a "$sock" -n k8s.io images import --no-unpack=false "$archive" >>"$LOGDIR/images.log" 2>&1
  local ref; ref=$(full_ref "$image")
  ctr -a "$sock" -n k8s.io images label "$ref" "pvbench.archive=$want" io.cri-containerd.pinned=pinned >>"$LOGDIR/images.log" 2>&1
}

# Every image goes into every node's containerd (any pod may land on any node), in two sets:
engine_images() {  # n: the pause image and the engines' (Argo's pods start as the node comes up)
  node_env "$1"
  local sock=$N_SOCK
  import_image "$sock" "$PAUSE_ARCHIVE" "$PAUSE_IMAGE"
  import_image "$sock" "$CONTROLLER_ARCHIVE" "$CONTROLLER_IMAGE"
  import_image "$sock" "$EXECUTOR_ARCHIVE" "$EXECUTOR_IMAGE"
  import_image "$sock" "$ARGOCLI_ARCHIVE" "$ARGOCLI_IMAGE"
  import_image "$sock" "$EVENTS_ARCHIVE" "$EVENTS_IMAGE"
}

project_images() {  # n: pvbench's own (runner, report), which no pod uses before the tests
  node_env "$1"
  local sock=$N_SOCK
  import_image "$sock" "$RUNNER_ARCHIVE" "$RUNNER_IMAGE"
  if [ -n "$REPORT_ARCHIVE" ]; then import_image "$sock" "$REPORT_ARCHIVE" "$REPORT_IMAGE"; fi
}

# ------------------------------------------------------------------ host state
record_host_state() {  # once per node: what down.sh restores
  local f=$STATE/host-state
  [ -s "$f" ] && return
  mkdir -p "$STATE"
  {
    for s in "${HOST_SYSCTLS[@]}"; do echo "sysctl $s $(sysctl -n "$s" 2>/dev/null || echo -)"; done
    [ -d /var/lib/cni ] && echo "existed /var/lib/cni" || echo "created /var/lib/cni"
    [ -d /var/log/containers ] && echo "existed /var/log/containers" || echo "created /var/log/containers"
    [ -d /var/run/netns ] && echo "existed /var/run/netns" || echo "created /var/run/netns"
    # the kubelet's device-plugin socket directory is a constant, outside --root-dir
    [ -d /var/lib/kubelet ] && echo "existed /var/lib/kubelet" || echo "created /var/lib/kubelet"
    for n in /var/run/netns/*; do if [ -e "$n" ]; then echo "netns $(basename "$n")"; fi; done
  } >"$f.tmp"
  mv "$f.tmp" "$f"
}

network() {
  local n bridges=()
  for n in $(seq "$NODES"); do
    node_env "$n"
    bridges+=("$N_BRIDGE")
    if ! ip link show "$N_BRIDGE" >/dev/null 2>&1; then
      ip link add "$N_BRIDGE" type bridge
      echo "created-bridge $N_BRIDGE" >>"$STATE/host-state"
    fi
    ip addr show dev "$N_BRIDGE" | grep -q "inet $N_GATEWAY/24" || ip addr add "$N_GATEWAY/24" dev "$N_BRIDGE"
    ip link set "$N_BRIDGE" up
    mkdir -p "$N_CNI/net.d" "$N_CNI/ipam"
    # the network's name is the prefix of the files CNI leaves in /var/lib/cni/results (down.sh)
    cat >"$N_CNI/net.d/10-pvbench.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "pvbench$([ "$n" = 1 ] || echo "-node$n")",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$N_BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$N_CNI/ipam",
        "ranges": [[{"subnet": "$N_NET.0/24", "rangeStart": "$N_NET.10", "rangeEnd": "$N_NET.250", "gateway": "$N_GATEWAY"}]],
        "routes": [{"dst": "$SERVICE_CIDR", "gw": "$N_GATEWAY"}, {"dst": "$POD_SUPERNET", "gw": "$N_GATEWAY"}]
      }
    }
  ]
}
EOF
  done
  # Pods of one node reach the other's (a multi-client cell's barrier) and the services on the
  # first bridge's address through the host, which routes between the bridges.
  [ "$NODES" = 1 ] || sysctl -q -w net.ipv4.ip_forward=1
  # No kube-proxy: in-cluster clients (Argo's executor in every step pod, the controllers,
  # the event sources and sensors) dial the `kubernetes` Service, $API_SERVICE_IP:443. Pods
  # route the service range to their bridge (the CNI routes above) and one DNAT rule in a
  # table of our own sends that address to the API server, as kube-proxy would.
  if ! nft list table ip "$NFT_TABLE" >/dev/null 2>&1; then
    echo "nft-table ip $NFT_TABLE" >>"$STATE/host-state"
    local ifs; ifs=$(printf '"%s", ' "${bridges[@]}")
    nft -f - <<EOF
table ip $NFT_TABLE {
  chain prerouting {
    type nat hook prerouting priority dstnat; policy accept;
    iifname { ${ifs%, } } ip daddr $API_SERVICE_IP tcp dport 443 dnat to $GATEWAY:$API_PORT
  }
}
EOF
  fi
}

media() {
  mkdir -p "$MEDIA"
  local fs dev
  # qos: an ext4 of its own, for the class whose driver the upgrade test changes
  # (sdk/tests/test_cluster_upgrade.py): a throttle on its loop device slows that class alone.
  # Its file is in memory: the other node's cells on the disk-backed media share this host's
  # disk, and at the same time they made its baselines as slow as the driver's limit (seen).
  mkdir -p "$QOS_BACKING"
  mountpoint -q "$QOS_BACKING" || mount -t tmpfs -o "size=$QOS_MEDIA_SIZE,mode=0700" pvbench-qos-backing "$QOS_BACKING"
  local img size
  for fs in ext4 xfs qos; do
    mkdir -p "$MEDIA/$fs"
    mountpoint -q "$MEDIA/$fs" && continue
    img=$(media_image "$fs") size=$MEDIA_SIZE
    [ "$fs" = qos ] && size=$QOS_MEDIA_SIZE
    truncate -s "$size" "$img"
    dev=$(losetup --find --show --direct-io=on "$img")
    echo "loop $dev $img" >>"$STATE/host-state"
    case $fs in
      ext4 | qos) mkfs.ext4 -q -F -L "pvbench-$fs" "$dev" ;;
      xfs) mkfs.xfs -q -f -L pvbench-xfs "$dev" ;;
    esac
    mount "$dev" "$MEDIA/$fs"
  done
  mkdir -p "$MEDIA/tmpfs"
  mountpoint -q "$MEDIA/tmpfs" || mount -t tmpfs -o "size=$TMPFS_SIZE,mode=0755" pvbench-tmpfs "$MEDIA/tmpfs"
}

# The shared (ReadWriteMany) class's network filesystem: an SFTP server (OpenSSH's sftp-server, one
# per connection, behind socat) serving a directory on the ext4 medium, mounted on the host with
# sshfs. Both nodes are this host, so both see the one mount; pods get it as local-path's hostPath
# volumes. allow_other: the pods' non-root fio goes through it.
shared_fs() {
  mkdir -p "$SHARED_EXPORT" "$SHARED_MOUNT"
  start sftp socat "TCP-LISTEN:$SFTP_PORT,bind=127.0.0.1,fork,reuseaddr" "EXEC:$SFTP_SERVER"
  wait_for "sftp-server on 127.0.0.1:$SFTP_PORT" 20 bash -c "exec 3<>/dev/tcp/127.0.0.1/$SFTP_PORT"
  pid_alive sftp || die "socat for the shared filesystem exited: is 127.0.0.1:$SFTP_PORT taken? (PVBENCH_CLUSTER_SFTP_PORT)"
  mountpoint -q "$SHARED_MOUNT" ||
    sshfs -o "directport=$SFTP_PORT,allow_other,reconnect" "127.0.0.1:$SHARED_EXPORT" "$SHARED_MOUNT"
}

# ------------------------------------------------------------------ certificates and kubeconfigs
pki_cert() {  # name subject [san]: a key and a certificate signed by the node's CA, in $PKI
  (cd "$PKI" &&
    openssl req -new -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" ${3:+-addext "subjectAltName=$3"} 2>/dev/null &&
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" -days 365 ${3:+-copy_extensions copy} 2>/dev/null &&
    rm -f "$1.csr" && chmod 600 "$1.key")
}

pki_kubeconfig() {  # file user
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: pvbench
  cluster:
    server: $API_SERVER
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    client-certificate: $PKI/$2.crt
    client-key: $PKI/$2.key
contexts:
- name: pvbench
  context: {cluster: pvbench, user: $2, namespace: pvbench}
current-context: pvbench
EOF
}

kubelet_pki() {  # n: node n's kubelet identity (system:node:<name>, what NodeRestriction checks)
  node_env "$1"
  pki_cert "kubelet$N_SFX" "/O=system:nodes/CN=system:node:$N_NAME"
  pki_kubeconfig "$PKI/kubelet$N_SFX.kubeconfig" "kubelet$N_SFX"
}

pki() {
  if [ -s "$PKI/ca.crt" ] && [ ! -s "$PKI/nats.crt" ]; then
    # the EventBus: Argo Events' JetStream clients insist on TLS (they do not verify it)
    pki_cert nats "/CN=pvbench-nats" "IP:$GATEWAY"
  fi
  local n
  if [ -s "$PKI/ca.crt" ]; then
    for n in $(seq "$NODES"); do node_env "$n"; [ -s "$PKI/kubelet$N_SFX.kubeconfig" ] || kubelet_pki "$n"; done
  fi
  [ -s "$PKI/ca.crt" ] && [ -s "$KUBECONFIG_PATH" ] && return
  mkdir -p "$PKI"
  (cd "$PKI" && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 365 -subj "/CN=pvbench-ci-ca" 2>/dev/null)
  pki_cert apiserver "/CN=kube-apiserver" "IP:$GATEWAY,IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  pki_cert admin "/O=system:masters/CN=pvbench-admin"
  pki_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
  pki_cert controller-manager "/CN=system:kube-controller-manager"
  pki_cert scheduler "/CN=system:kube-scheduler"
  (cd "$PKI" && openssl genrsa -out sa.key 2048 2>/dev/null && openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null && chmod 600 sa.key)
  pki_kubeconfig "$PKI/controller-manager.kubeconfig" controller-manager
  pki_kubeconfig "$PKI/scheduler.kubeconfig" scheduler
  pki_kubeconfig "$KUBECONFIG_PATH.tmp" admin && mv "$KUBECONFIG_PATH.tmp" "$KUBECONFIG_PATH"
  pki  # the NATS certificate and the kubelets', signed by the CA just made
}

# ------------------------------------------------------------------ processes
start() {  # name cmd...: run detached in its own process group, log to $LOGDIR/name.log
  local name=$1; shift
  pid_alive "$name" && return
  setsid "$@" >>"$LOGDIR/$name.log" 2>&1 < /dev/null &
  echo $! >"$RUNDIR/$name.pid"
}

wait_for() {  # what seconds cmd...
  local what=$1 t=$2; shift 2
  for _ in $(seq "$((t * 2))"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  die "$what did not come up in ${t}s (logs: $LOGDIR)"
}

containerd_config() {  # n: node n's containerd (its own root, state, sockets and CNI networks)
  node_env "$1"
  mkdir -p "$STATE/containerd$N_SFX" "$N_CTR_ROOT"
  cat >"$STATE/containerd$N_SFX/config.toml" <<EOF
version = 2
root = "$N_CTR_ROOT"
state = "$RUNDIR/containerd$N_SFX"
# plugins that would touch host paths outside ours (/opt/containerd) or are not needed
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$N_SOCK"
[ttrpc]
  address = "$RUNDIR/containerd$N_SFX.ttrpc.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # root here lacks CAP_SYS_RESOURCE: without this every sandbox fails to start
  restrict_oom_score_adj = true
  # a raw Block volume's device belongs to the pod's runAsUser/runAsGroup, as a mounted volume's
  # files do with fsGroup: without it the non-root fio container cannot open its device
  device_ownership_from_security_context = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$N_CNI/net.d"
    max_conf_num = 1
EOF
}

kubelet_config() {  # n: node n's kubelet, on its own loopback address (the same ports)
  node_env "$1"
  mkdir -p "$N_KUBELET_DIR" "$STATE/pod-logs$N_SFX"
  # a cgroup root of its own: the two kubelets' kubepods (and their QoS and eviction) are apart
  if [ "$N_CGROUP_ROOT" != / ]; then
    local h
    for h in /sys/fs/cgroup/*/; do
      [ -e "$h/cgroup.procs" ] || continue
      mkdir -p "$h$N_CGROUP_ROOT"
      # cgroup v1 cpuset: a new cgroup has no CPUs or memory nodes until given its parent's
      if [ -e "$h/cpuset.cpus" ]; then
        cat "$h/cpuset.cpus" >"$h$N_CGROUP_ROOT/cpuset.cpus"
        cat "$h/cpuset.mems" >"$h$N_CGROUP_ROOT/cpuset.mems"
      fi
    done
  fi
  cat >"$STATE/kubelet$N_SFX-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $N_ADDR
port: 10250
readOnlyPort: 0
healthzBindAddress: $N_ADDR
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$N_SOCK
cgroupRoot: $N_CGROUP_ROOT
# this machine: cgroup v1, no systemd, swap irrelevant
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
podLogsDir: $STATE/pod-logs$N_SFX
volumePluginDir: $STATE/kubelet-plugins$N_SFX
# images cannot be pulled back here: never garbage-collect them; evict only when really full.
# In bytes, not a share: 2% of a large disk is 5 GB of 250; a CI run on this machine with ~12 GB
# free before it got below that, both nodes were tainted disk-pressure and nothing of ours
# scheduled (seen; the second node's images take ~6 GB more).
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 200Mi, nodefs.available: 1Gi, imagefs.available: 1Gi, nodefs.inodesFree: 1%}
serializeImagePulls: false
maxPods: 60
rotateCertificates: false
EOF
}

processes() {
  mkdir -p "$STATE/etcd"
  local fsync=(); etcd --help 2>&1 | grep -q unsafe-no-fsync && fsync=(--unsafe-no-fsync)
  start etcd etcd --name pvbench --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "pvbench=http://127.0.0.1:$ETCD_PEER_PORT" --max-request-bytes 8388608 \
    --quota-backend-bytes 4294967296 --listen-metrics-urls "" "${fsync[@]}"
  local n
  for n in $(seq "$NODES"); do
    containerd_config "$n"
    start "containerd$N_SFX" containerd --config "$STATE/containerd$N_SFX/config.toml"
  done
  wait_for etcd 30 curl -sf "http://127.0.0.1:$ETCD_PORT/health"
  for n in $(seq "$NODES"); do node_env "$n"; wait_for "containerd$N_SFX" 30 ctr -a "$N_SOCK" version; done

  start kube-apiserver "$BIN/kube-apiserver" \
    --advertise-address "$GATEWAY" --bind-address "$GATEWAY" --secure-port "$API_PORT" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" --service-cluster-ip-range "$SERVICE_CIDR" \
    --client-ca-file "$PKI/ca.crt" --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types Hostname \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction --allow-privileged=true \
    --profiling=false --v=1
  wait_for kube-apiserver 120 curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "$API_SERVER/readyz"

  start kube-controller-manager "$BIN/kube-controller-manager" \
    --kubeconfig "$PKI/controller-manager.kubeconfig" --authentication-kubeconfig "$PKI/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$PKI/controller-manager.kubeconfig" \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --use-service-account-credentials=true --leader-elect=false --secure-port 0 \
    --controllers '*,-nodeipam,-cloud-node-lifecycle,-route,-service' --v=1
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$PKI/scheduler.kubeconfig" \
    --authentication-kubeconfig "$PKI/scheduler.kubeconfig" --authorization-kubeconfig "$PKI/scheduler.kubeconfig" \
    --leader-elect=false --secure-port 0 --v=1

  # The EventBus's JetStream (Argo Events' "exotic" bus: a NATS the cluster does not manage).
  mkdir -p "$STATE/nats"
  start nats "$TOOLS/bin/nats-server" --jetstream --store_dir "$STATE/nats" --addr "$GATEWAY" --port "$NATS_PORT" \
    --tls --tlscert "$PKI/nats.crt" --tlskey "$PKI/nats.key"

  for n in $(seq "$NODES"); do
    kubelet_config "$n"
    start "kubelet$N_SFX" "$BIN/kubelet" --config "$STATE/kubelet$N_SFX-config.yaml" \
      --kubeconfig "$PKI/kubelet$N_SFX.kubeconfig" --root-dir "$N_KUBELET_DIR" --cert-dir "$STATE/kubelet$N_SFX-pki" \
      --hostname-override "$N_NAME" --v=1
  done
}

node_ready() {  # name
  k get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True
}

nodes_ready() {  # every node Ready, labelled with its number ($NODE_LABEL)
  local n
  for n in $(seq "$NODES"); do
    node_env "$n"
    wait_for "node $N_NAME Ready" 180 node_ready "$N_NAME"
    k label node "$N_NAME" --overwrite "$NODE_LABEL=$n" >/dev/null
  done
}

cluster_objects() {
  {
    for sc in "${STORAGE_CLASSES[@]}"; do
      cat <<EOF
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: $sc
  labels: {app.kubernetes.io/part-of: pvbench-ci}
  annotations: {pvbench.io/medium: "${sc#pvbench-}"}
provisioner: $PROVISIONER_NAME
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
EOF
    done
    cat <<EOF
---
apiVersion: v1
kind: Namespace
metadata: {name: pvbench, labels: {app.kubernetes.io/part-of: pvbench-ci}}
EOF
  } | k apply -f - >"$LOGDIR/objects.log"
  # the default ServiceAccount of a namespace appears asynchronously
  wait_for "serviceaccount pvbench/default" 60 k -n pvbench get serviceaccount default
}

# The real Argo Workflows (controller + argo-server) and Argo Events (controller), installed
# as a user installs them: the upstream namespace-install manifests, CRDs included, from
# the module zips (ci/install-argo.sh), applied with kustomize (built into kubectl). The
# overlays change only what a node without a registry needs: the image tags/pull policy,
# and the namespace. The EventBus is JetStream on the host's nats-server.
argo_install() {
  [ -d "$ARGO_WORKFLOWS_MANIFESTS/namespace-install" ] || die "$ARGO_WORKFLOWS_MANIFESTS is missing: run ci/install-argo.sh"
  [ -d "$ARGO_MANIFESTS/events" ] || die "$ARGO_MANIFESTS/events is missing: run ci/install-argo.sh"
  local dir=$STATE/argo-install
  rm -rf "$dir"; mkdir -p "$dir/workflows" "$dir/events"
  cp -r "$ARGO_WORKFLOWS_MANIFESTS" "$dir/upstream-workflows"
  cp "$ARGO_MANIFESTS/events/namespace-install.yaml" "$dir/events/upstream.yaml"
  cat >"$dir/workflows/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: pvbench
resources: [../upstream-workflows/namespace-install]
images:  # upstream's kustomize base says :latest (always pulled); a release pins its version
  - {name: quay.io/argoproj/workflow-controller, newTag: $ARGO_WORKFLOWS_VERSION}
  - {name: quay.io/argoproj/argocli, newTag: $ARGO_WORKFLOWS_VERSION}
patches:
  - target: {kind: Deployment, name: argo-server}
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --auth-mode=server
      # the run's report opens in the Argo UI's artifact view (docs/kubernetes.md, "Open a run's
      # report"): argo-server's default policy for artifact files runs no script at all
      - op: add
        path: /spec/template/spec/containers/0/env
        value: [{name: ARGO_ARTIFACT_CONTENT_SECURITY_POLICY, value: "$ARTIFACT_CSP"}]
  # a CI speed setting only: the controller looks at a running workflow every second instead of
  # every 10 s (its documented DEFAULT_REQUEUE_TIME; 1s is what Argo's own development setup
  # uses). A finished pod's workflow is requeued after exactly that long, so it is the wait
  # between one step and the next: ~9 s off every sequential step (2 s left ~1 s more, ~70 s of
  # the cluster stage's ~70 steps). What users see at the default, with a pod per cell and with
  # cells-per-pod: pvbench_lab.bench_argo_cells, both settings side by side (docs/performance.md)
  - target: {kind: Deployment, name: workflow-controller}
    patch: |-
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {name: DEFAULT_REQUEUE_TIME, value: 1s}
EOF
  cat >"$dir/events/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: pvbench
resources: [upstream.yaml]
patches:
  - target: {kind: Deployment, name: controller-manager}
    patch: |-
      - op: replace
        path: /spec/template/spec/containers/0/imagePullPolicy
        value: IfNotPresent
      - op: add
        path: /spec/template/spec/containers/0/env/-
        value: {name: IMAGE_PULL_POLICY, value: IfNotPresent}
EOF
  k kustomize "$dir/workflows" >"$dir/workflows.yaml"
  k kustomize "$dir/events" >"$dir/events.yaml"
  k apply --server-side --force-conflicts -f "$dir/workflows.yaml" -f "$dir/events.yaml" >"$LOGDIR/argo-install.log"
  wait_for "Argo CRDs established" 60 k wait --for condition=established --timeout 5s \
    crd/workflows.argoproj.io crd/workflowtemplates.argoproj.io crd/cronworkflows.argoproj.io \
    crd/eventbus.argoproj.io crd/eventsources.argoproj.io crd/sensors.argoproj.io
  k apply -f - >>"$LOGDIR/argo-install.log" <<EOF
apiVersion: argoproj.io/v1alpha1
kind: EventBus
metadata: {name: default, namespace: pvbench}
spec:
  jetstreamExotic:
    url: nats://$GATEWAY:$NATS_PORT
    streamConfig: |
      replicas: 1
      maxAge: 24h
EOF
  local d
  for d in workflow-controller argo-server controller-manager; do
    k -n pvbench rollout status "deployment/$d" --timeout 180s >>"$LOGDIR/argo-install.log" 2>&1 ||
      die "Argo: deployment $d not available in 180s (logs: $LOGDIR; kubectl -n pvbench logs deploy/$d)"
  done
}

# rancher's local-path-provisioner, as its own deploy/local-path-storage.yaml sets it up, except that
# it runs on the host (no registry for its image) and its helper pods (mkdir, rm -rf of a volume's
# directory) use the runner image instead of busybox, as root.
local_path() {
  k apply -f - >"$LOGDIR/local-path-objects.log" <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $LOCAL_PATH_NAMESPACE, labels: {app.kubernetes.io/part-of: pvbench-ci}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $LOCAL_PATH_CLASS, labels: {app.kubernetes.io/part-of: pvbench-ci}}
provisioner: rancher.io/local-path
volumeBindingMode: WaitForFirstConsumer
reclaimPolicy: Delete
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: $SHARED_CLASS, labels: {app.kubernetes.io/part-of: pvbench-ci}}
provisioner: rancher.io/local-path
volumeBindingMode: Immediate
reclaimPolicy: Delete
---
apiVersion: v1
kind: ConfigMap
metadata: {name: local-path-config, namespace: $LOCAL_PATH_NAMESPACE}
data:
  config.json: |-
    {"storageClassConfigs": {
      "$LOCAL_PATH_CLASS": {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["$LOCAL_PATH_DIR"]}]},
      "$SHARED_CLASS": {"sharedFileSystemPath": "$SHARED_MOUNT"}}}
  setup: |-
    #!/bin/sh
    set -eu
    mkdir -m 0777 -p "\$VOL_DIR"
    chmod 0777 "\$VOL_DIR"
  teardown: |-
    #!/bin/sh
    set -eu
    rm -rf "\$VOL_DIR"
  helperPod.yaml: |-
    apiVersion: v1
    kind: Pod
    metadata: {name: helper-pod}
    spec:
      securityContext: {runAsUser: 0}
      containers:
      - name: helper-pod
        image: $RUNNER_IMAGE
        imagePullPolicy: Never
EOF
  mkdir -p "$LOCAL_PATH_DIR"
  wait_for "serviceaccount $LOCAL_PATH_NAMESPACE/default" 60 k -n "$LOCAL_PATH_NAMESPACE" get serviceaccount default
  start local-path "$LOCAL_PATH_BIN" start --kubeconfig "$KUBECONFIG_PATH" --namespace "$LOCAL_PATH_NAMESPACE" \
    --provisioner-name rancher.io/local-path --configmap-name local-path-config \
    --helper-image "$RUNNER_IMAGE" --service-account-name default
}

provisioner() {
  local args=()
  for sc in "${STORAGE_CLASSES[@]}"; do args+=(--class "$sc=$MEDIA/${sc#pvbench-}"); done
  start provisioner "$PYTHON" -u "$HERE/provisioner.py" --server "$API_SERVER" --ca "$PKI/ca.crt" \
    --cert "$PKI/admin.crt" --key "$PKI/admin.key" --name "$PROVISIONER_NAME" --media-root "$MEDIA" "${args[@]}"
}

healthy() {
  local p n
  for p in etcd kube-apiserver kube-controller-manager kube-scheduler provisioner nats sftp local-path; do
    pid_alive "$p" || return 1
  done
  for n in $(seq "$NODES"); do
    node_env "$n"
    pid_alive "containerd$N_SFX" && pid_alive "kubelet$N_SFX" && node_ready "$N_NAME" || return 1
  done
}

# ================================================================== main
# Packages, binaries and images: everything the node needs that is built, nothing that runs.
# `up.sh --prepare` does only this (no node state, no `latest` log link): `make test` runs it
# in the background, niced, while the fast suite runs, and up.sh then finds it all cached.
prepare() {
  step binaries
  BUILD_PID=
  if [ -z "$(binaries_ok)" ]; then
    log "building Kubernetes $K8S_VERSION from the Go module proxy (cold: ~8 min; log: $LOGDIR/go-build.log)"
    ( build_binaries ) >"$LOGDIR/go-build.log" 2>&1 &
    BUILD_PID=$!
  fi

  step images
  # containers/image keeps a blob-info cache in /var/lib/containers/cache (no setting moves
  # it): if buildah creates that directory here, it goes again after the builds
  local made_vlc=0; [ -e /var/lib/containers ] || made_vlc=1
  RUNNER_ARCHIVE=$(project_image "$RUNNER_IMAGE" ci/images/runner/Dockerfile)
  REPORT_ARCHIVE=
  if [ "$BUILD_REPORT_IMAGE" = 1 ] && [ -f "$REPO/ci/images/report/Dockerfile" ]; then
    REPORT_ARCHIVE=$(project_image "$REPORT_IMAGE" ci/images/report/Dockerfile)
  fi

  if [ -n "$BUILD_PID" ]; then
    step "binaries (waiting for the Go build)"
    wait "$BUILD_PID" || die "the Kubernetes build failed: $LOGDIR/go-build.log"
  fi
  PAUSE_ARCHIVE=$(pause_image)
  CONTROLLER_ARCHIVE=$(engine_image "$CONTROLLER_IMAGE" workflow-controller zoneinfo)
  EXECUTOR_ARCHIVE=$(engine_image "$EXECUTOR_IMAGE" argoexec)
  ARGOCLI_ARCHIVE=$(engine_image "$ARGOCLI_IMAGE" argo)
  EVENTS_ARCHIVE=$(engine_image "$EVENTS_IMAGE" argo-events)
  if [ "$made_vlc" = 1 ]; then rm -rf /var/lib/containers; fi
}

main() {
  preflight
  step packages; packages
  if [ "$PREPARE_ONLY" = 1 ]; then
    # A RUN step runs in its own cgroup (cpu:/buildah-…), which the scheduler weighs as one
    # task of nice 0 whatever our nice: in the background (ci/test-stages.sh) the report
    # image's npm ci and Evidence compile took their full share from the fast suite (it ran
    # 716 s instead of 555). cpu.shares 2 against 1024 leaves them what the suite leaves idle.
    BUILD_CPU="--cpu-shares 2"
    prepare
    trap - ERR
    log "prepared in $(( $(date +%s) - T0 ))s: binaries and images cached (logs: $LOGDIR)"
    return
  fi

  if [ -s "$KUBECONFIG_PATH" ] && [ -x "$BIN/kubectl" ] && healthy; then
    log "the node is already up; checking images and objects"
    REUSE=1
  else
    REUSE=0
    if [ -e "$STATE" ] || [ -e "$RUNDIR/containerd.pid" ]; then
      log "leftovers of an earlier node: tearing them down first"
      "$HERE/down.sh" >"$LOGDIR/down-before-up.log" 2>&1 || true
      mkdir -p "$RUNDIR"
    fi
  fi

  prepare

  if [ "$REUSE" = 0 ]; then
    step host-state; record_host_state
    step network; network
    step media; media
    step "shared filesystem"; shared_fs
    step pki; pki
    step processes; processes
  fi

  step "images into containerd"
  local n pid imports=()
  for n in $(seq "$NODES"); do engine_images "$n"; done
  # pvbench's images change with every commit (a fresh clone: 2.6 GB a node, 77 s one node after
  # the other): imported into every node at once, beside the steps below, which do not use them
  for n in $(seq "$NODES"); do
    project_images "$n" &
    imports+=($!)
  done

  step "nodes Ready"; nodes_ready
  step "CRDs, storage classes, namespace"; cluster_objects
  step provisioner; provisioner
  step "local-path-provisioner"; local_path
  step "Argo Workflows and Argo Events"; argo_install
  step "pvbench's images into containerd (begun with the engines')"
  for pid in "${imports[@]}"; do wait "$pid"; done

  trap - ERR
  log "up in $(( $(date +%s) - T0 ))s. export KUBECONFIG=$KUBECONFIG_PATH   (logs: $LOGDIR)"
  echo "KUBECONFIG=$KUBECONFIG_PATH"
}

# Sourcing this file (tests, debugging) defines the functions without running anything.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
