#!/usr/bin/env bash
# Builds Argo CD's real argocd-cmp-server (and cmp-client, a driver that speaks to it the way
# argocd-repo-server does) from the wrapper module harness/argocd/go, with modules from the Go module
# proxy only. Cache-keyed like harness/cluster/build.sh:
#   ${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}/argocd-cmp-server-<version>/bin/{argocd-cmp-server,cmp-client}
# A build whose .complete stamp exists is skipped (a warm run takes well under a second).
# Prints the bin folder on its last line.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MOD="$HERE/go"
VERSION="$(awk '$1 == "github.com/argoproj/argo-cd/v3" { print $2; exit }' "$MOD/go.mod")"
[[ -n "$VERSION" ]] || { echo "argocd-build.sh: no argo-cd version in $MOD/go.mod" >&2; exit 1; }
CACHE="${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}"
OUT="$CACHE/argocd-cmp-server-$VERSION"
command -v go >/dev/null || { echo "argocd-build.sh: go not found on PATH" >&2; exit 1; }
V="${VERSION#v}"
LDFLAGS="-s -w -X github.com/argoproj/argo-cd/v3/common.version=$V"
LDFLAGS+=" -X github.com/argoproj/argo-cd/v3/common.buildDate=1970-01-01T00:00:00Z"
LDFLAGS+=" -X github.com/argoproj/argo-cd/v3/common.gitTag=$VERSION"
LDFLAGS+=" -X github.com/argoproj/argo-cd/v3/common.gitTreeState=clean"
# The stamp records the recipe: the toolchain, the flags and the wrapper's sources, so an edited
# client or a changed flag is rebuilt.
KEY="$({ go version; echo "$LDFLAGS"; cat "$MOD/go.mod" "$MOD/go.sum" "$MOD"/cmd/*/main.go; } | sha256sum | cut -c1-16)"
if [[ -f "$OUT/.complete" ]] && grep -q "key=$KEY" "$OUT/.complete"; then
  echo "[argocd-build] argocd-cmp-server $VERSION: cached" >&2
  echo "$OUT/bin"; exit 0
fi
# One build at a time per cache: a second caller (a tier's setup while `npm test`'s early
# background build runs) waits here, then finds the stamp or builds it itself.
mkdir -p "$OUT"
exec {lock}>"$OUT/.lock"
flock "$lock"
if [[ -f "$OUT/.complete" ]] && grep -q "key=$KEY" "$OUT/.complete"; then
  echo "[argocd-build] argocd-cmp-server $VERSION: cached (built meanwhile)" >&2
  echo "$OUT/bin"; exit 0
fi
export GOCACHE="$CACHE/go/cache" GOMODCACHE="$CACHE/go/mod"
# No DWARF: the binaries are stripped (-s -w) anyway, and compiling it is work for nothing.
export GOFLAGS="-mod=readonly -buildvcs=false -trimpath -gcflags=all=-dwarf=false"
export GOMAXPROCS="${GOMAXPROCS:-2}" GOGC="${PREWARM_BUILD_GOGC:-75}" CGO_ENABLED=0
JOBS="${PREWARM_BUILD_JOBS:-2}"
t0=$SECONDS
echo "[argocd-build] building argocd-cmp-server $VERSION and cmp-client (-p $JOBS)" >&2
rm -rf "$OUT/bin.tmp" && mkdir -p "$OUT/bin.tmp"
(cd "$MOD" && go build -p "$JOBS" -ldflags "$LDFLAGS" -o "$OUT/bin.tmp/" ./cmd/argocd-cmp-server ./cmd/cmp-client)
rm -f "$OUT/.complete" && rm -rf "$OUT/bin" && mv "$OUT/bin.tmp" "$OUT/bin"
echo "key=$KEY built $(date -u +%FT%TZ) in $((SECONDS - t0))s" > "$OUT/.complete"
echo "[argocd-build] done in $((SECONDS - t0))s" >&2
echo "$OUT/bin"
