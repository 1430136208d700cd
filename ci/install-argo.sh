#!/usr/bin/env bash
# Build the real Argo engines pvbench runs on, from the Go module proxy, by exact version:
#
#   Argo Workflows v4.0.5   workflow-controller, argoexec (the executor in every step pod)
#          and     v3.7.18  and the argo CLI (argo-server; `argo lint --offline`)
#   Argo Events    v1.9.11  one binary: controller, eventsource-service, sensor-service, lint
#   NATS server    v2.15.2  the JetStream the EventBus runs on
#
#   ci/install-argo.sh            # into $PVBENCH_TOOLS (default <repo>/.tools)
#
# Each Argo Workflows version goes to $PVBENCH_TOOLS/argo/<version>/bin, with its upstream
# manifests (CRDs, namespace install) in $PVBENCH_TOOLS/argo/<version>/manifests; the first
# version's argo CLI is also $PVBENCH_TOOLS/bin/argo. Argo Events' manifests go to
# $PVBENCH_TOOLS/argo/manifests/events. The cluster stage installs those, as they are.
# v4.0.5 is the newest /v4 release the Go module proxy serves here. Security advisories exist for
# it: fine for a test engine on a throwaway node, not a version to run; use the newest 4.x.
#
# Built binaries are kept per version in a machine-wide cache ($PVBENCH_ARGO_CACHE, default
# ~/.cache/pvbench/argo), so a fresh clone on a machine that built them once copies them in
# seconds; a cold build is ~20 min on 2 cores (Go builds of four large modules).
# Why not `go install MODULE@VERSION`: argo-workflows' go.mod has a replace directive, which
# `go install` refuses; so the module zip is unpacked and built in place.
set -euo pipefail

ARGO_WORKFLOWS_VERSIONS=(v4.0.5 v3.7.18)  # ci/cluster/lib.sh: the first is the cluster stage's default
ARGO_EVENTS_VERSION=v1.9.11
NATS_VERSION=v2.15.2

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools=${PVBENCH_TOOLS:-$repo/.tools}
bin=$tools/bin
cache=${PVBENCH_ARGO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pvbench/argo}
mkdir -p "$bin" "$cache" "$tools/argo"

if [ -x /usr/local/go/bin/go ]; then export PATH=/usr/local/go/bin:$PATH; fi
command -v go >/dev/null || { echo "install-argo: go is not installed" >&2; exit 1; }
export CGO_ENABLED=0 GOFLAGS=-mod=mod

log() { echo "install-argo: $*"; }

# Unpack MODULE@VERSION's zip into $cache/src (writable: the module cache is read-only).
unpack() {  # module version -> prints the directory
  local module=$1 version=$2 name dir zip
  name=$(basename "$module" | sed 's/^v[0-9]*$//'); [ -n "$name" ] || name=$(basename "$(dirname "$module")")
  dir=$cache/src/$name-$version
  if [ ! -f "$dir/.unpacked" ]; then
    zip=$(go mod download -json "$module@$version" | sed -n 's/^\s*"Zip": "\(.*\)",$/\1/p')
    [ -s "$zip" ] || { echo "install-argo: go mod download $module@$version gave no zip" >&2; exit 1; }
    rm -rf "$dir" "$dir.tmp"; mkdir -p "$dir.tmp"
    python3 - "$zip" "$dir.tmp" "$module@$version" <<'PY'
import sys, zipfile, os
zf, out, prefix = sys.argv[1], sys.argv[2], sys.argv[3] + "/"
with zipfile.ZipFile(zf) as z:
    for info in z.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        dst = os.path.join(out, info.filename[len(prefix):])
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with z.open(info) as src, open(dst, "wb") as f:
            f.write(src.read())
PY
    mv "$dir.tmp" "$dir"
    touch "$dir/.unpacked"
  fi
  echo "$dir"
}

# Build one binary unless the cache has it for this version; copy it into $into (default $bin).
build() {  # name version srcdir package ldflags [into]
  local name=$1 version=$2 src=$3 pkg=$4 cached=$cache/bin/$1-$2 bin=${6:-$bin}
  mkdir -p "$bin"
  if [ ! -x "$cached" ]; then
    log "building $name $version (go build $pkg)"
    mkdir -p "$cache/bin"
    # no debug information (ci/go-tool.sh says why)
    (cd "$src" && go build -trimpath -ldflags "-s -w $5" -gcflags=all=-dwarf=false -o "$cached.tmp" "$pkg")
    mv "$cached.tmp" "$cached"
  fi
  if ! cmp -s "$cached" "$bin/$name" 2>/dev/null; then cp "$cached" "$bin/$name.tmp" && mv "$bin/$name.tmp" "$bin/$name"; fi
  echo "$version" >"$bin/.$name.version"
}

for version in "${ARGO_WORKFLOWS_VERSIONS[@]}"; do
  major=${version%%.*}  # the module path's /v3, /v4
  wf=$(unpack "github.com/argoproj/argo-workflows/$major" "$version")
  # The repository has signal_linux.go as a symlink to signal_darwin.go; module zips drop
  # symlinks, and argoexec then fails to build with "undefined: Setpgid".
  osspec=$wf/workflow/executor/osspecific
  [ -f "$osspec/signal_linux.go" ] || cp "$osspec/signal_darwin.go" "$osspec/signal_linux.go"
  # the version in the binaries: without it the controller's default executor image is
  # argoexec:v0.0.0 (every step pod in ImagePullBackOff)
  mod=github.com/argoproj/argo-workflows/$major
  wf_ld="-X $mod.version=$version -X $mod.gitTag=$version -X $mod.gitTreeState=clean"
  into=$tools/argo/$version/bin
  build workflow-controller "$version" "$wf" ./cmd/workflow-controller "$wf_ld" "$into"
  build argoexec "$version" "$wf" ./cmd/argoexec "$wf_ld" "$into"
  # The argo CLI embeds the UI's built assets (ui/dist/app); building the UI needs its own
  # JavaScript toolchain. As upstream's `make STATIC_FILES=false`: a placeholder page, the
  # API server and `argo lint` are complete without it.
  if [ ! -f "$wf/ui/dist/app/index.html" ]; then
    mkdir -p "$wf/ui/dist/app"
    echo "Argo Workflows UI not built (STATIC_FILES=false); the API is served." >"$wf/ui/dist/app/index.html"
  fi
  build argo "$version" "$wf" ./cmd/argo "$wf_ld" "$into"
  # Upstream's manifests, installed as they are (CRDs, namespace install): never written by hand
  rm -rf "$tools/argo/$version/manifests"; cp -r "$wf/manifests" "$tools/argo/$version/manifests"
  chmod -R u+w "$tools/argo/$version/manifests"
done
# the CLI the tests and `argo lint` use: the default version's
default=${ARGO_WORKFLOWS_VERSIONS[0]}
cp "$tools/argo/$default/bin/argo" "$bin/argo.tmp" && mv "$bin/argo.tmp" "$bin/argo"
echo "$default" >"$bin/.argo.version"

ev=$(unpack github.com/argoproj/argo-events "$ARGO_EVENTS_VERSION")
build argo-events "$ARGO_EVENTS_VERSION" "$ev" ./cmd "-X github.com/argoproj/argo-events.version=$ARGO_EVENTS_VERSION"

nats=$(unpack github.com/nats-io/nats-server/v2 "$NATS_VERSION")
build nats-server "$NATS_VERSION" "$nats" . ""

# Argo Events' manifests (the namespace install, the controller config), as they are
rm -rf "$tools/argo/manifests.tmp"; mkdir -p "$tools/argo/manifests.tmp"
cp -r "$ev/manifests" "$tools/argo/manifests.tmp/events"
chmod -R u+w "$tools/argo/manifests.tmp"
rm -rf "$tools/argo/manifests"; mv "$tools/argo/manifests.tmp" "$tools/argo/manifests"
printf 'argo-workflows %s\nargo-events %s\nnats-server %s\n' "${ARGO_WORKFLOWS_VERSIONS[*]}" "$ARGO_EVENTS_VERSION" \
  "$NATS_VERSION" >"$tools/argo/VERSIONS"

"$bin/argo" version --short 2>/dev/null | head -1 || true
log "Argo Workflows ${ARGO_WORKFLOWS_VERSIONS[*]} in $tools/argo/<version>/bin; argo-events $ARGO_EVENTS_VERSION; nats-server $NATS_VERSION in $bin"
