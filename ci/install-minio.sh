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
. ci/go-tool.sh  # (the working directory is the repository, above)
go_tool minio github.com/minio/minio "$MINIO_VERSION" "$TOOLS/bin"
"$TOOLS/bin/minio" --version | head -1
