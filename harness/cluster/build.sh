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
# shellcheck source=../build-lib.sh
. "$HERE/../build-lib.sh"

TAGS=selinux,notest

# The names the harness runs them by.
rename_outputs() {
  local name="$1" dir="$2"
  if [[ "$name" == etcd && -f "$dir/server" ]]; then mv "$dir/server" "$dir/etcd"; fi
  if [[ "$name" == kruise ]]; then mv "$dir/kruise" "$dir/kruise-manager" && mv "$dir/daemon" "$dir/kruise-daemon"; fi
  return 0
}
POST_BUILD=rename_outputs

# build_one NAME VERSION MODULE_DIR CGO "LDFLAGS" PKG...: MODULE_DIR under harness/cluster/go.
build_one() {
  local name="$1" version="$2" moddir="$3"; shift 3
  build_cached "$name" "$version" "$HERE/go/$moddir" "$TAGS" "$@"
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
build_log "all requested components ready in $((SECONDS - T0))s (cache $CACHE)"
