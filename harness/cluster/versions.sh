# Versions of the components of the prewarm test cluster (sourced by build.sh and read by the TS harness).
K8S_VERSION=v1.36.5
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
CRICTL_VERSION=v1.37.0
PAUSE_VERSION=v1
# Peers, built only by the tiers and benchmarks that run them (build.sh kruise).
KRUISE_VERSION=v1.9.0
