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
mkdir -p "$bin"
. "$repo/ci/go-tool.sh"

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
  go_tool "$name" "$module" "$version" "$bin"
  echo "$version" >"$stamp"
}

install kubeconform github.com/yannh/kubeconform/cmd/kubeconform "$KUBECONFORM_VERSION"
install helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"

"$bin/helm" version --short
"$bin/kubeconform" -v
