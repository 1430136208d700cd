# Sourced by ci/install-minio.sh and ci/install-tools.sh: one way to put a Go tool built from the
# module proxy into a clone.
#
#   go_tool NAME MODULE VERSION BIN [AS]    # NAME at VERSION into BIN (as AS: a command whose
#                                           # package is named `server`, say)
#
# Built once per machine into $PVBENCH_TOOLS_CACHE (default ~/.cache/pvbench/tools, as
# ci/install-argo.sh keeps its engines under ~/.cache/pvbench/argo), then copied into each clone:
# a fresh clone (CI's) linked MinIO and helm again from Go's build cache, 26 s of every CI setup.
go_tool() {
  local name=$1 module=$2 version=$3 bin=$4 as=${5:-$1}
  local cache=${PVBENCH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pvbench/tools}
  local cached=$cache/$as-$version
  mkdir -p "$cache" "$bin"
  if [ ! -x "$cached" ]; then
    echo "$as: building $version (go install $module@$version; minutes on a cold Go cache)"
    # No debug information: -gcflags=all=-dwarf=false skips making it (helm cold: 133/127 s instead
    # of 152/139 s, two pairs on 2 cores), -ldflags '-s -w' drops the symbol table; panics still
    # print their stacks. CI tools built from source, never debugged here. An older local go
    # fetches the toolchain the module asks for through the Go proxy (GOTOOLCHAIN=auto, the
    # default); export GOTOOLCHAIN=local to forbid that.
    rm -rf "$cached.build" && mkdir -p "$cached.build"
    GOBIN=$cached.build GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" -gcflags=all=-dwarf=false \
      "$module@$version"
    mv "$cached.build/$name" "$cached" && rm -rf "$cached.build"
  fi
  cp "$cached" "$bin/$as.tmp" && mv "$bin/$as.tmp" "$bin/$as"
  echo "$as: $version from $cache into $bin"
}
