#!/usr/bin/env bash
# Builds Argo CD's real argocd-cmp-server (and cmp-client, a driver that speaks to it the way
# argocd-repo-server does) from the wrapper module harness/argocd/go, with modules from the Go module
# proxy only. Cached by recipe like harness/cluster/build.sh (harness/build-lib.sh):
#   ${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}/argocd-cmp-server-<version>/bin/{argocd-cmp-server,cmp-client}
# Prints the bin folder on its last line.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MOD="$HERE/go"
VERSION="$(awk '$1 == "github.com/argoproj/argo-cd/v3" { print $2; exit }' "$MOD/go.mod")"
[[ -n "$VERSION" ]] || { echo "argocd build.sh: no argo-cd version in $MOD/go.mod" >&2; exit 1; }
# shellcheck source=../build-lib.sh
. "$HERE/../build-lib.sh"
V="${VERSION#v}"
LDFLAGS="-X github.com/argoproj/argo-cd/v3/common.version=$V"
LDFLAGS+=" -X github.com/argoproj/argo-cd/v3/common.buildDate=1970-01-01T00:00:00Z"
LDFLAGS+=" -X github.com/argoproj/argo-cd/v3/common.gitTag=$VERSION"
LDFLAGS+=" -X github.com/argoproj/argo-cd/v3/common.gitTreeState=clean"
build_cached argocd-cmp-server "$VERSION" "$MOD" "" 0 "$LDFLAGS" ./cmd/argocd-cmp-server ./cmd/cmp-client
echo "$(component_dir argocd-cmp-server "$VERSION")/bin"
