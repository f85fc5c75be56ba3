#!/usr/bin/env bash
# Installs the pinned Renovate CLI for renovate.test.ts into its own versioned folder, never into
# the project's package.json (it is about 400 MB with its native modules). 39.x is the last line
# that runs on Node.js 20, the project's engine; Renovate 40 and later need Node.js 22. Its install
# scripts compile re2 (the regex engine Renovate uses in production, and so the one its regex
# managers must be valid for) and better-sqlite3 with node-gyp against Debian's Node.js headers:
# that needs g++, make and python3, and is most of the cold install (about 10 minutes on 2 shared
# cores). Cached in ${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}/renovate-<version>/; prints the
# path of its renovate executable.
set -euo pipefail
RENOVATE=39.264.1
OUT="${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}/renovate-$RENOVATE"
BIN="$OUT/node_modules/.bin/renovate"
if [[ -f "$OUT/.complete" ]]; then echo "$BIN"; exit 0; fi
# One install at a time per cache (two worktrees' gitops runs may start together).
mkdir -p "$(dirname "$OUT")"
exec 9>"$OUT.lock"
flock 9
if [[ -f "$OUT/.complete" ]]; then echo "$BIN"; exit 0; fi
for tool in g++ make python3; do
  command -v "$tool" >/dev/null || { echo "[renovate-install] $tool is required to build Renovate's native modules" >&2; exit 1; }
done
T0=$SECONDS
rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp"
timeout 1800 npm install --prefix "$OUT.tmp" "renovate@$RENOVATE" --no-audit --no-fund --no-save --loglevel=error >&2
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
"$BIN" --version >/dev/null
touch "$OUT/.complete"
echo "[renovate-install] renovate $RENOVATE installed in $((SECONDS - T0))s ($(du -sh "$OUT" | cut -f1))" >&2
echo "$BIN"
