#!/usr/bin/env bash
# Print what the node changes on the host, in a stable form: cluster-stage.sh takes one
# snapshot before up.sh and one after down.sh and fails on any difference.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

echo "## sysctls"
for s in "${HOST_SYSCTLS[@]}"; do echo "$s = $(sysctl -n "$s" 2>/dev/null)"; done
echo "## network"
for n in 1 2; do
  node_env "$n"
  ip -o link show "$N_BRIDGE" 2>/dev/null | awk '{print $2}'
  ip -o addr 2>/dev/null | awk -v g="$N_GATEWAY/" 'index($4, g) == 1 {print $2, $4}'
done
ls /var/run/netns 2>/dev/null | grep '^cni-' | sort
if command -v nft >/dev/null && nft list table ip "$NFT_TABLE" >/dev/null 2>&1; then echo "nft table ip $NFT_TABLE"; fi
echo "## loop devices"
losetup -a 2>/dev/null | grep -F -e "$STATE" -e pvbench | sort
echo "## mounts"
awk -v s="$STATE" -v r="$RUNDIR" -v c="$CACHE" 'index($5, s) == 1 || index($5, r) == 1 || index($5, c) == 1 || $5 ~ /^\/var\/run\/netns\/cni-/ {print $5}' /proc/self/mountinfo | sort
echo "## cgroups"
ls -d /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/pvbench-node* 2>/dev/null
echo "## directories"
for d in "$STATE" "$RUNDIR" /var/lib/cni /var/log/containers /var/log/pods /opt/containerd /var/lib/kubelet /etc/cni \
    /var/lib/containers /run/containers; do
  [ -e "$d" ] && echo "$d"
done
echo "## processes"
for p in /proc/[0-9]*; do
  cmd=$(tr '\0' ' ' 2>/dev/null <"$p/cmdline") || continue
  case $cmd in *"$STATE"*|*"$RUNDIR"*|*"$CACHE/bin"*|*"$RUNDIR/containerd"*) echo "${cmd:0:120}" ;; esac
done | grep -v -e host-snapshot -e 'grep ' | sort
