#!/usr/bin/env bash
# Fetches the CRDs that deploy/flux and deploy/argocd instantiate, the one `synth --pod-monitor`
# does, and the one docs/operations.md's Karpenter recipe does, from the controllers' own Go
# modules on the module proxy (the only source of them here): Flux's kustomize-controller and
# source-controller, Argo CD's install.yaml, the Prometheus Operator's PodMonitor CRD (its root
# module; pkg/apis/monitoring holds only Go types, and later root versions are not served), and
# Karpenter's NodePool CRD (sigs.k8s.io/karpenter, the provider-neutral core); also the Go types of
# the kubelet's configuration file (k8s.io/kubelet of the harness's Kubernetes release), which has
# no schema of its own. Cached in
# ${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}/gitops-crds-<versions>/; prints that folder.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FLUX_KC=v1.10.1 FLUX_SC=v1.10.1
PROMOP=v0.85.0
KARPENTER=v1.15.0
# shellcheck source=../../harness/cluster/versions.sh
source "$HERE/../../harness/cluster/versions.sh"
KUBELET="v0${K8S_VERSION#v1}"
ARGOCD="$(awk '$1 == "github.com/argoproj/argo-cd/v3" { print $2; exit }' "$HERE/../../harness/argocd/go/go.mod")"
CACHE="${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}"
OUT="$CACHE/gitops-crds-kc$FLUX_KC-sc$FLUX_SC-argocd$ARGOCD-promop$PROMOP-karpenter$KARPENTER-kubelet$KUBELET"
if [[ -f "$OUT/.complete" ]]; then echo "$OUT"; exit 0; fi
export GOMODCACHE="$CACHE/go/mod" GOFLAGS= GOTOOLCHAIN=local
M="$GOMODCACHE/github.com"
# These modules declare a newer go line than the local toolchain: `go mod download` still fetches,
# verifies and extracts them, then reports that; what counts is that the files are there.
(cd "$(mktemp -d)" && go mod download "github.com/fluxcd/kustomize-controller@$FLUX_KC" "github.com/fluxcd/source-controller@$FLUX_SC" \
  "github.com/argoproj/argo-cd/v3@$ARGOCD" "github.com/prometheus-operator/prometheus-operator@$PROMOP" \
  "sigs.k8s.io/karpenter@$KARPENTER" "k8s.io/kubelet@$KUBELET" >/dev/null 2>&1) || true
rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp"
cp "$M/fluxcd/kustomize-controller@$FLUX_KC/config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml" \
   "$M/fluxcd/source-controller@$FLUX_SC/config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml" \
   "$M/fluxcd/source-controller@$FLUX_SC/config/crd/bases/source.toolkit.fluxcd.io_ocirepositories.yaml" \
   "$M/argoproj/argo-cd/v3@$ARGOCD/manifests/install.yaml" "$OUT.tmp/"
cp "$M/argoproj/argo-cd/v3@$ARGOCD/manifests/crds/application-crd.yaml" "$OUT.tmp/argocd-application-crd.yaml"
cp "$M/prometheus-operator/prometheus-operator@$PROMOP/example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml" "$OUT.tmp/"
cp "$GOMODCACHE/sigs.k8s.io/karpenter@$KARPENTER/pkg/apis/crds/karpenter.sh_nodepools.yaml" "$OUT.tmp/"
cp "$GOMODCACHE/k8s.io/kubelet@$KUBELET/config/v1beta1/types.go" "$OUT.tmp/kubelet-config-v1beta1-types.go"
chmod -R u+w "$OUT.tmp"
rm -rf "$OUT" && mv "$OUT.tmp" "$OUT" && touch "$OUT/.complete"
echo "$OUT"
