#!/usr/bin/env bash
# Builds the archive the krew manifest (deploy/krew/prewarm.yaml) installs: the compiled CLI with
# its production dependencies under prewarm/, one archive for every platform (it runs on the
# user's node). Writes lib/krew/prewarm-kubectl-v<version>.tar.gz (or into the folder given) and
# prints its path and sha256. Run from anywhere; needs npm and the registry for `npm ci`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VERSION="v$(node -p "require('$ROOT/package.json').version")"
OUT="${1:-$ROOT/lib/krew}"
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
(cd "$ROOT" && npm run build --silent)
P="$STAGE/prewarm"
mkdir -p "$P/lib"
cp "$ROOT/package.json" "$ROOT/package-lock.json" "$P/"
cp -r "$ROOT/crds" "$P/"
cp -r "$ROOT/lib/src" "$ROOT/lib/imports" "$P/lib/"
(cd "$P" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --silent)
# What package.json's "bin" names; krew links the manifest's `bin` and needs it executable.
chmod 0755 "$P/lib/src/cli/bin.js" "$P/lib/src/cli/kubectl-prewarm.js"
"$P/lib/src/cli/kubectl-prewarm.js" --version >/dev/null
mkdir -p "$OUT"
ARCHIVE="$OUT/prewarm-kubectl-$VERSION.tar.gz"
tar -czf "$ARCHIVE" -C "$STAGE" prewarm
echo "$ARCHIVE"
sha256sum "$ARCHIVE" | cut -d' ' -f1
