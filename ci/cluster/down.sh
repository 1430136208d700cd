#!/usr/bin/env bash
# Tear the node down and restore every host change up.sh (or the kubelet) made:
# containers and their shims, processes, mounts (pod volumes, media, containerd rootfs),
# network namespaces, the bridge, loop devices, kubepods cgroups, sysctls, directories.
# The cache (binaries, images) and the logs stay. Safe to run twice, or with nothing up.
#   ci/cluster/down.sh [--keep-state]     (--keep-state: leave $STATE for inspection)
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# every node up.sh can make, whatever PVBENCH_CLUSTER_NODES says now
ALL_NODES="2 1"
KEEP_STATE=0
[ "${1:-}" = "--keep-state" ] && KEEP_STATE=1
[ "$(id -u)" -eq 0 ] || die "down.sh needs root"
HOST_STATE=$STATE/host-state
LOGDIR=$(readlink -f "$LOG_ROOT/latest" 2>/dev/null || true)

# 0. diagnostics for the logs, while the API still answers
if [ -n "$LOGDIR" ] && [ -d "$LOGDIR" ] && [ -x "$BIN/kubectl" ] && [ -s "$KUBECONFIG_PATH" ] && pid_alive kube-apiserver; then
  k get nodes,pods,pvc,pv,events -A -o wide --request-timeout 10s >"$LOGDIR/final-state.txt" 2>&1 || true
  # what the Argo Events pods said (a change that started no run is found here)
  for d in $(k -n pvbench get deploy -o name --request-timeout 10s 2>/dev/null | grep -e sensor -e eventsource); do
    k -n pvbench logs "$d" --tail 300 --request-timeout 10s >"$LOGDIR/${d#deployment.apps/}.log" 2>&1 || true
  done
fi

# 1. no new containers: stop the kubelets and the provisioner first
for n in $ALL_NODES; do node_env "$n"; stop_pid "kubelet$N_SFX" 30; done
stop_pid provisioner 5
stop_pid local-path 5

# 2. containers and sandboxes, through each node's containerd while it still runs
for n in $ALL_NODES; do
  node_env "$n"
  pid_alive "containerd$N_SFX" || continue
  for ns in k8s.io default; do
    for t in $(ctr -a "$N_SOCK" -n "$ns" tasks ls -q 2>/dev/null); do
      ctr -a "$N_SOCK" -n "$ns" tasks kill -s SIGKILL "$t" >/dev/null 2>&1
    done
    sleep 1
    for t in $(ctr -a "$N_SOCK" -n "$ns" tasks ls -q 2>/dev/null); do
      ctr -a "$N_SOCK" -n "$ns" tasks delete -f "$t" >/dev/null 2>&1
    done
    for c in $(ctr -a "$N_SOCK" -n "$ns" containers ls -q 2>/dev/null); do
      ctr -a "$N_SOCK" -n "$ns" containers delete "$c" >/dev/null 2>&1
    done
  done
done

# 3. control plane, then the containerds
for p in kube-scheduler kube-controller-manager kube-apiserver etcd containerd containerd2 nats; do stop_pid "$p" 20; done
# the shared class's network filesystem: its mount, then its SFTP server (files open on the ext4 medium)
if mountpoint -q "$SHARED_MOUNT" 2>/dev/null; then umount "$SHARED_MOUNT" 2>/dev/null || umount -l "$SHARED_MOUNT"; fi
stop_pid sftp 5

# 4. shims and pods' processes left behind: only those started for our containerd sockets
for n in $ALL_NODES; do
  node_env "$n"
  for pid in $(grep -l -s -a -- "$N_SOCK" /proc/[0-9]*/cmdline | cut -d/ -f3); do
    kill -KILL "$pid" 2>/dev/null
  done
done
for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/pvbench-node*; do
  [ -d "$cg" ] || continue
  for pid in $(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
done
sleep 0.5

# 5a. the test provisioner's Block volumes: loop devices over files on the media (provisioner.py)
for dev in $(losetup -l -n -O NAME,BACK-FILE 2>/dev/null | awk -v m="$MEDIA/" 'index($2, m) == 1 {print $1}'); do
  losetup -d "$dev"
done

# 5. mounts below our directories (pod volumes, containerd rootfs/shm, media), deepest first
for root in "$STATE" "$RUNDIR" "$CACHE/containerd" "$CACHE/buildah"; do
  for m in $(awk -v r="$root" 'index($5, r) == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
  done
done

# 6. loop devices (recorded by up.sh, and any still backed by our media files)
if [ -s "$HOST_STATE" ]; then
  while read -r kind dev file; do
    [ "$kind" = loop ] || continue
    losetup "$dev" 2>/dev/null | grep -qF "$file" && losetup -d "$dev"
  done <"$HOST_STATE"
fi
for dev in $(for fs in ext4 xfs qos; do losetup -j "$(media_image "$fs")" -O NAME -n 2>/dev/null; done); do
  losetup -d "$dev"
done
# the tmpfs behind pvbench-qos's image: free once its loop device is
if mountpoint -q "$QOS_BACKING" 2>/dev/null; then umount "$QOS_BACKING" 2>/dev/null || umount -l "$QOS_BACKING"; fi

# 7. network namespaces made by our sandboxes (cni-*), the bridge
if [ -s "$HOST_STATE" ]; then
  for n in /var/run/netns/cni-*; do
    [ -e "$n" ] || continue
    grep -qx "netns $(basename "$n")" "$HOST_STATE" && continue
    umount "$n" 2>/dev/null; rm -f "$n"
  done
  grep -qx "created /var/run/netns" "$HOST_STATE" && rmdir /var/run/netns 2>/dev/null
  for n in $ALL_NODES; do
    node_env "$n"
    grep -q "^created-bridge $N_BRIDGE\$" "$HOST_STATE" && ip link del "$N_BRIDGE" 2>/dev/null
  done
fi
for n in $ALL_NODES; do
  node_env "$n"
  ip link show "$N_BRIDGE" >/dev/null 2>&1 && ip addr del "$N_GATEWAY/24" dev "$N_BRIDGE" 2>/dev/null
done
# the DNAT for the `kubernetes` Service (a table of our own: nothing else is touched)
if command -v nft >/dev/null && nft list table ip "$NFT_TABLE" >/dev/null 2>&1; then nft delete table ip "$NFT_TABLE"; fi

# 8. cgroups the kubelet and runc created (v1 hierarchies and the unified one)
# (and the cgroup roots of the nodes after the first, made by up.sh)
for cg in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/pvbench-node*; do
  [ -d "$cg" ] || continue
  find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
  [ -d "$cg" ] && echo "down: could not remove $cg (processes still in it?)" >&2
done

# 9. sysctls back to what they were before the node
if [ -s "$HOST_STATE" ]; then
  while read -r kind key value; do
    [ "$kind" = sysctl ] && [ "$value" != - ] || continue
    [ "$(sysctl -n "$key" 2>/dev/null)" = "$value" ] || sysctl -q -w "$key=$value" >/dev/null
  done <"$HOST_STATE"
fi

# 10. directories the kubelet / CNI created outside ours
if [ -s "$HOST_STATE" ]; then
  find /var/log/containers -maxdepth 1 -type l -lname "$STATE/*" -delete 2>/dev/null
  grep -qx "created /var/log/containers" "$HOST_STATE" && rmdir /var/log/containers 2>/dev/null
  rm -f /var/lib/cni/results/pvbench-* /var/lib/kubelet/device-plugins/kubelet.sock 2>/dev/null
  # containerd's loopback of each pod sandbox (network "cni-loopback") caches its result here too;
  # a sandbox gone without a CNI DEL (the node torn down under a pod) leaves it behind. Ours only:
  # newer than the host state, which up.sh records once before the node starts.
  find /var/lib/cni/results -maxdepth 1 -type f -name 'cni-loopback-*' -newer "$HOST_STATE" -delete 2>/dev/null
  if grep -qx "created /var/lib/kubelet" "$HOST_STATE"; then
    find /var/lib/kubelet -depth -type d -empty -delete 2>/dev/null
  fi
  if grep -qx "created /var/lib/cni" "$HOST_STATE"; then
    find /var/lib/cni -depth -type d -empty -delete 2>/dev/null
  fi
fi

# 11. state (unless kept), runtime dir
if [ "$KEEP_STATE" = 0 ]; then
  if awk -v r="$STATE" 'index($5, r) == 1 {f=1} END {exit !f}' /proc/self/mountinfo; then
    echo "down: mounts remain below $STATE; not removing it" >&2
  else
    rm -rf "$STATE"
  fi
fi
rm -rf "$RUNDIR"
echo "down: node removed, host restored${LOGDIR:+ (logs: $LOGDIR)}"
