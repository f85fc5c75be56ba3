#!/usr/bin/env bash
# Builds the Go binaries of the prewarm test cluster from module source (no downloads but modules).
# Idempotent and cache-keyed: ${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}/<component>-<version>/bin.
# A component whose .complete stamp carries the key of its recipe (go version, module files, flags,
# packages) is skipped, so a warm run takes well under a second and a changed recipe rebuilds.
# Usage: harness/cluster/build.sh [component...]   (components: pause etcd kubernetes crictl kwok;
# kruise, OpenKruise's manager and daemon, only when a tier or benchmark that runs it asks;
# kubelet is an alias of kubernetes, which builds it)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.sh
. "$HERE/versions.sh"
CACHE="${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}"
export GOCACHE="$CACHE/go/cache" GOMODCACHE="$CACHE/go/mod"
# No DWARF: the binaries are stripped (-s -w) anyway, and compiling it is work for nothing.
export GOFLAGS="-mod=readonly -buildvcs=false -trimpath -gcflags=all=-dwarf=false"
# Keep memory in check on a 2-core CI machine: two compile jobs, GC a bit more eagerly.
JOBS="${PREWARM_BUILD_JOBS:-2}"
export GOMAXPROCS="${GOMAXPROCS:-2}" GOGC="${PREWARM_BUILD_GOGC:-75}"
command -v go >/dev/null || { echo "build.sh: go not found on PATH" >&2; exit 1; }

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

TAGS=selinux,notest

# recipe_key MODULE_DIR CGO "LDFLAGS" PKG...: what a component's binaries are a function of.
recipe_key() {
  local moddir="$1"; shift
  local f files=()
  for f in "$HERE/go/$moddir"/*; do [[ "$f" == *.go || "$f" == */go.mod || "$f" == */go.sum ]] && files+=("$f"); done
  { go version; echo "$GOFLAGS $TAGS $*"; cat "${files[@]}"; } | sha256sum | cut -c1-16
}

# build_one NAME VERSION MODULE_DIR CGO "LDFLAGS" PKG...
build_one() {
  local name="$1" version="$2" moddir="$3" cgo="$4" ldflags="$5"; shift 5
  local out="$CACHE/$name-$version" key
  key="$(recipe_key "$moddir" "$cgo" "$ldflags" "$@")"
  mkdir -p "$out"
  # One build per component at a time (a second build.sh waits), and a cache hit only when the
  # stamp of this recipe and the binaries are both there: two concurrent builds once left a stamp
  # and no bin/.
  exec {lock}>"$out/.lock"
  flock "$lock"
  if [[ -f "$out/.complete" ]] && grep -q "^key=$key " "$out/.complete" && [[ -n "$(ls -A "$out/bin" 2>/dev/null)" ]]; then
    log "$name $version: cached at $out/bin"; flock -u "$lock"; return 0
  fi
  rm -f "$out/.complete"
  local tmp; tmp="$(mktemp -d "$out/bin.tmp.XXXXXX")"
  log "$name $version: building $* (CGO_ENABLED=$cgo, -p $JOBS)"
  local t0=$SECONDS
  (cd "$HERE/go/$moddir" && CGO_ENABLED="$cgo" go build -p "$JOBS" -tags "$TAGS" \
      -ldflags "-s -w $ldflags" -o "$tmp/" "$@")
  if [[ "$name" == etcd && -f "$tmp/server" ]]; then mv "$tmp/server" "$tmp/etcd"; fi
  if [[ "$name" == kruise ]]; then mv "$tmp/kruise" "$tmp/kruise-manager" && mv "$tmp/daemon" "$tmp/kruise-daemon"; fi
  rm -rf "$out/bin" && mv "$tmp" "$out/bin"
  echo "key=$key built $(date -u +%FT%TZ) in $((SECONDS - t0))s" > "$out/.complete"
  log "$name $version: done in $((SECONDS - t0))s -> $(ls "$out/bin" | tr '\n' ' ')"
  flock -u "$lock"
}

k8s_ldflags() {
  local v="${K8S_VERSION#v}" major minor
  major="${v%%.*}"; minor="${v#*.}"; minor="${minor%%.*}"
  local p=k8s.io/component-base/version
  local q=k8s.io/client-go/pkg/version
  local f=""
  for pkg in $p $q; do
    f+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    f+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$f"
}

want="${*:-pause etcd kubernetes crictl kwok}"
T0=$SECONDS
for c in $want; do
  case "$c" in
    pause) build_one pause "$PAUSE_VERSION" pause 0 "" . ;;
    etcd) build_one etcd "$ETCD_VERSION" etcd 0 "" go.etcd.io/etcd/server/v3 go.etcd.io/etcd/etcdctl/v3 ;;
    # One build, one cgo setting: the kubelet's only cgo users are the net resolver and os/user
    # lookups, whose pure-Go forms serve the harness (it reaches everything by IP and resolves
    # users from /etc/passwd). A second CGO_ENABLED=1 build would compile again every package
    # that imports net, nearly all of them, for no difference here.
    kubernetes|kubelet) build_one kubernetes "$K8S_VERSION" kubernetes 0 "$(k8s_ldflags)" \
        k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl \
        k8s.io/kubernetes/cmd/kubelet ;;
    crictl) build_one crictl "$CRICTL_VERSION" cri-tools 0 "-X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION" \
        sigs.k8s.io/cri-tools/cmd/crictl ;;
    kruise) build_one kruise "$KRUISE_VERSION" kruise 0 "" \
        github.com/openkruise/kruise github.com/openkruise/kruise/cmd/daemon ;;
    kwok) build_one kwok "$KWOK_VERSION" kwok 0 "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok ;;
    *) echo "build.sh: unknown component $c" >&2; exit 2 ;;
  esac
done
log "all requested components ready in $((SECONDS - T0))s (cache $CACHE)"
