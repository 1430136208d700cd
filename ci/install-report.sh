#!/usr/bin/env bash
# Install the Evidence report project (reports/) on a Debian machine with Node.js 20 + npm:
# `npm ci` from the committed package-lock.json, then the package's postinstall patches: the
# air-gapped Parquet patch (reports/scripts/offline-parquet.mjs), which makes DuckDB-wasm read
# Parquet without downloading an extension, and reports/scripts/sveltekit-workers.mjs, which
# ends SvelteKit's build workers when done and starts its client build once the server build's
# memory is free (the build's peak memory), and reports/scripts/sveltekit-bundles.mjs, which lets
# a build reuse the site's bundles an earlier build compiled (pvbench.report.bundles), and
# reports/scripts/relative-base.mjs, which makes the built site work under any path prefix (the
# Argo UI's artifact view, an S3 website, an ingress sub-path). After this,
# `pvbench report build` needs no network at all.
# Idempotent: does nothing when node_modules already matches the lock file and the patch.
set -euo pipefail
cd "$(dirname "$0")/../reports"

die() { echo "install-report: $*" >&2; exit 1; }
command -v node >/dev/null || die "node is not installed (apt-get install nodejs npm; Node.js 20 recommended)"
command -v npm >/dev/null || die "npm is not installed (apt-get install npm)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 18 ] || die "Node.js $(node --version) is too old; Evidence needs 18 or newer (20 recommended)"

stamp=node_modules/.pvbench-install-stamp
want=$(cat package.json package-lock.json scripts/offline-parquet.mjs scripts/sveltekit-workers.mjs \
  scripts/sveltekit-bundles.mjs scripts/relative-base.mjs scripts/kit-patch.mjs scripts/replace-once.mjs | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && node scripts/offline-parquet.mjs >/dev/null 2>&1 \
  && node scripts/sveltekit-workers.mjs >/dev/null 2>&1 && node scripts/sveltekit-bundles.mjs >/dev/null 2>&1 \
  && node scripts/relative-base.mjs >/dev/null 2>&1; then
  echo "reports/: node_modules matches package-lock.json, offline Parquet, SvelteKit build and relative-base patches in place"
  exit 0
fi

echo "reports/: npm ci (about 1 minute, ~700 MB)"
rm -f "$stamp"
npm ci --no-audit --no-fund --prefer-offline --loglevel=error
# Again, explicitly: npm may be configured with ignore-scripts; this fails loudly if the
# upstream code changed and a patch no longer applies.
node scripts/offline-parquet.mjs
node scripts/sveltekit-workers.mjs
node scripts/sveltekit-bundles.mjs
node scripts/relative-base.mjs
echo "$want" > "$stamp"
