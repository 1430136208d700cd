#!/usr/bin/env bash
# Install the CLI tools the Argo/Helm tests need: helm and kubeconform, built from
# source through the Go module proxy (the only route to them on an offline CI machine).
#
#   ci/install-tools.sh            # into $PVBENCH_TOOLS/bin, default <repo>/.tools/bin
#
# Idempotent: a tool already at the pinned version is left alone, so CI can call this
# on every run and pay the ~2 min helm build only once per machine (the binaries are kept in
# $PVBENCH_TOOLS_CACHE, default ~/.cache/pvbench/tools, and copied into each clone; a fresh
# machine builds).
# Needs: go on PATH (or at /usr/local/go/bin) and the Go module proxy.
set -euo pipefail

HELM_VERSION=v3.22.0
KUBECONFORM_VERSION=v0.8.0

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools=${PVBENCH_TOOLS:-$repo/.tools}
bin=$tools/bin
cache=${PVBENCH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pvbench/tools}
mkdir -p "$bin" "$cache"

# Prefer the machine's Go toolchain in /usr/local/go over an older distribution package.
if [ -x /usr/local/go/bin/go ]; then export PATH=/usr/local/go/bin:$PATH; fi
if ! command -v go >/dev/null 2>&1; then
  echo "install-tools: go is not installed (needed to build helm and kubeconform)" >&2
  exit 1
fi
# helm v3.22 needs Go >= 1.24; Go >= 1.21 fetches that toolchain itself through the module
# proxy (GOTOOLCHAIN=auto, the default), older ones cannot.
go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
if [ "${go_minor:-0}" -lt 21 ]; then
  echo "install-tools: $(go env GOVERSION) is too old; Go >= 1.21 is needed (helm $HELM_VERSION builds with >= 1.24)" >&2
  exit 1
fi

# A stamp file per tool records the version that was built; the binary's own
# --version output differs between tools, so the stamp is the simple, uniform check.
install() {  # name module version
  local name=$1 module=$2 version=$3
  local stamp=$bin/.$name.version
  if [ -x "$bin/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    echo "install-tools: $name $version already in $bin"
    return
  fi
  # built once per machine (the user's cache, as ci/install-argo.sh keeps its engines), then
  # copied into each clone: a fresh clone (CI's) linked helm again, ~12 s, from Go's build cache
  local cached=$cache/$name-$version
  if [ ! -x "$cached" ]; then
    echo "install-tools: building $name $version (go install $module@$version)"
    # An older local go fetches the toolchain the module asks for through the Go proxy
    # (GOTOOLCHAIN=auto, the default); export GOTOOLCHAIN=local to forbid that.
    # no debug information (ci/install-minio.sh says why)
    rm -rf "$cached.build" && mkdir -p "$cached.build"
    GOBIN=$cached.build GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" -gcflags=all=-dwarf=false "$module@$version"
    mv "$cached.build/$name" "$cached" && rm -rf "$cached.build"
  fi
  cp "$cached" "$bin/$name.tmp" && mv "$bin/$name.tmp" "$bin/$name"
  echo "install-tools: $name $version from $cache into $bin"
  echo "$version" >"$stamp"
}

install kubeconform github.com/yannh/kubeconform/cmd/kubeconform "$KUBECONFORM_VERSION"
install helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"

"$bin/helm" version --short
"$bin/kubeconform" -v
