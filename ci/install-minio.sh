#!/usr/bin/env bash
# Build the MinIO server (and nothing else) into .tools/bin with the Go module proxy.
# MinIO has no semver tags; the pseudo-version is pinned so every machine tests the same server.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="${PVBENCH_TOOLS:-$PWD/.tools}"
MINIO_VERSION="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
mkdir -p "$TOOLS/bin"
if [ -x "$TOOLS/bin/minio" ]; then
  echo "minio: already in $TOOLS/bin"
  exit 0
fi
if ! command -v go >/dev/null; then
  echo "minio: Go is needed to build MinIO (apt-get install golang, or install Go ≥ 1.24)" >&2
  exit 1
fi
# Built once per machine into the user's cache (ci/install-tools.sh's), then copied into each
# clone: a fresh clone (CI's) linked MinIO again from Go's build cache, ~12 s.
CACHE="${PVBENCH_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pvbench/tools}"
CACHED="$CACHE/minio-$MINIO_VERSION"
if [ ! -x "$CACHED" ]; then
  echo "minio: building $MINIO_VERSION (a few minutes on a cold cache)"
  # No debug information: -gcflags=all=-dwarf=false skips making it (helm cold: 133/127 s instead
  # of 152/139 s, two pairs on 2 cores), -ldflags '-s -w' drops the symbol table; panics still
  # print their stacks. CI tools built from source, never debugged here.
  rm -rf "$CACHED.build" && mkdir -p "$CACHED.build"
  GOBIN="$CACHED.build" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" -gcflags=all=-dwarf=false \
    "github.com/minio/minio@$MINIO_VERSION"
  mv "$CACHED.build/minio" "$CACHED" && rm -rf "$CACHED.build"
fi
cp "$CACHED" "$TOOLS/bin/minio.tmp" && mv "$TOOLS/bin/minio.tmp" "$TOOLS/bin/minio"
echo "minio: $MINIO_VERSION from $CACHE"
"$TOOLS/bin/minio" --version | head -1
