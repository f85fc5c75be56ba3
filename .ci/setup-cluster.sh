#!/usr/bin/env bash
# Installs what the prewarm test cluster needs and builds its Go binaries (cached by version).
# Idempotent: a warm run (packages present, binaries cached) takes a few seconds.
#   .ci/setup-cluster.sh            # packages + all components
#   PREWARM_SKIP_APT=1 .ci/setup-cluster.sh   # binaries only
#   .ci/setup-cluster.sh --background   # packages now; every build in the background (npm test's pretest)
# --background installs the packages, then starts every build, niced and bounded, one after another in
# the background: the cluster's components, then those only the peers and gitops tiers use
# (OpenKruise, Argo CD's cmp-server, Renovate). A cold `npm test` compiles them while the type check,
# lint and unit tiers leave a core idle and while the cluster tiers wait on timers. Every tier still
# runs the build scripts of what it needs in its setup (harness/cluster/build.ts): it waits on that
# build's lock, then finds the cached result, or builds again and fails loudly.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
T0=$SECONDS
BACKGROUND=0
for arg in "$@"; do
  case "$arg" in
    --background) BACKGROUND=1 ;;
    *) echo "setup-cluster.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done
PKGS=(containerd runc containernetworking-plugins docker-registry skopeo umoci iproute2 socat
      busybox-static iptables conntrack openssl apache2-utils util-linux findutils tar
      qemu-user   # qemu-user: test/synth/sleeper.test.ts runs the foreign architecture's sleeper
      binutils)   # binutils: strip, for the reconciler image's node binary (harness/cluster/images.ts)

if [[ "${PREWARM_SKIP_APT:-0}" != 1 ]]; then
  missing=()
  for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "[setup-cluster] installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # Debian starts no daemons here (no systemd), but make sure the packaged services are not
  # running on the machine's addresses: the harness runs its own instances in its netns.
  for svc in docker-registry containerd; do
    if command -v service >/dev/null && service "$svc" status >/dev/null 2>&1; then service "$svc" stop || true; fi
  done
fi

command -v go >/dev/null || { echo "[setup-cluster] go is required (Go toolchain on PATH)" >&2; exit 1; }
if ((BACKGROUND)); then
  CACHE="${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}"
  mkdir -p "$CACHE"
  LOG="$CACHE/background-builds.log"
  # Bounded like the tiers' own waits on these builds; one after another, to keep memory in check.
  nohup nice -n 19 timeout 5400 bash -c '"$1/harness/cluster/build.sh"; "$1/harness/cluster/build.sh" kruise;
    "$1/harness/argocd/build.sh" >/dev/null; "$1/test/gitops/renovate-install.sh" >/dev/null' \
    background-builds "$ROOT" >"$LOG" 2>&1 </dev/null &
  echo "[setup-cluster] building the components, OpenKruise, Argo CD's cmp-server and Renovate in the background (pid $!, log $LOG)"
else
  "$ROOT/harness/cluster/build.sh"
fi
echo "[setup-cluster] ready in $((SECONDS - T0))s"
