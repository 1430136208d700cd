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
echo "minio: building $MINIO_VERSION (a few minutes on a cold cache)"
# No debug information: -gcflags=all=-dwarf=false skips making it (helm cold: 133/127 s instead
# of 152/139 s, two pairs on 2 cores), -ldflags '-s -w' drops the symbol table; panics still
# print their stacks. CI tools built from source, never debugged here.
GOBIN="$TOOLS/bin" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" -gcflags=all=-dwarf=false \
  "github.com/minio/minio@$MINIO_VERSION"
"$TOOLS/bin/minio" --version | head -1
