#!/usr/bin/env bash
# Builds the prewarm reconciler sidecar image as an OCI image layout, without a Docker engine.
#
#   src/reconciler/build-image.sh OUT_DIR [TAG]     (prints OUT_DIR:TAG on stdout)
#
# The image holds what src/reconciler/Dockerfile's runtime stage holds, built from this machine
# instead of a base image: the host's node binary and the shared libraries it links (ldd), the
# compiled sidecar (the files of lib/src that src/reconciler/image-files.mjs finds in its import
# graph, from `tsc -p src/reconciler`), a package.json marking it ESM, /etc/passwd with the numeric non-root
# user 65532, and /tmp.
# The sidecar has no runtime npm dependencies (see src/http/client.ts), so no node_modules.
# The architecture is the host's; for multi-arch images use the Dockerfile with buildx.
#
# Push the layout with its layer zstd-compressed (docs/benchmarks.md, the sidecar image, says why):
#   skopeo copy --dest-compress-format zstd --dest-compress-level 7 oci:OUT_DIR:TAG docker://REGISTRY/prewarm-reconciler:TAG
# Needs: umoci (apt-get install umoci), strip (binutils), node, npx (tsc from devDependencies), ldd.
set -euo pipefail

out=${1:?usage: build-image.sh OUT_DIR [TAG]}
tag=${2:-latest}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
command -v umoci >/dev/null || { echo "build-image.sh: umoci not found (apt-get install umoci)" >&2; exit 2; }
command -v strip >/dev/null || { echo "build-image.sh: strip not found (apt-get install binutils)" >&2; exit 2; }

(cd "$repo" && npx tsc -p src/reconciler/tsconfig.json) >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs

# node and every library it links, at the same paths (the dynamic loader included).
node=$(readlink -f "$(command -v node)")
install -D -m 0755 "$node" "$rootfs/usr/local/bin/node"
# Without the symbol and debug sections a distribution's node may keep (Debian's does, 12 MiB):
# nothing the sidecar runs reads them, and every joining node pulls and unpacks this image.
strip --strip-all "$rootfs/usr/local/bin/node"
ldd "$node" | grep -o '/[^ )]*' | sort -u | while read -r lib; do
  for p in "$lib" "$(readlink -f "$lib")"; do
    install -D -m 0755 "$(readlink -f "$p")" "$rootfs$p"
  done
done

# The compiled sidecar: the files its import graph reaches, the list the Dockerfile copies too.
node "$repo/src/reconciler/image-files.mjs" "$repo/lib" "$rootfs/app/lib" >/dev/null
printf '{"type":"module"}\n' >"$rootfs/app/package.json"

mkdir -p "$rootfs/etc" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"

# Reproducible layer: fixed mtimes and ownership.
find "$rootfs" -exec touch -h -d @0 {} +
chown -R 0:0 "$rootfs"

case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) arch=$(uname -m) ;;
esac

rm -rf "$out"
umoci init --layout "$out"
umoci new --image "$out:$tag"
umoci insert --image "$out:$tag" --history.created 1970-01-01T00:00:00Z --history.created_by build-image.sh "$rootfs" /
# The node flags of the Dockerfile's ENTRYPOINT, where they are written once.
mapfile -t flags < <(node -e '
  const m = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(require("fs").readFileSync(process.argv[1], "utf8"));
  if (!m) { console.error("build-image.sh: no exec-form ENTRYPOINT in " + process.argv[1]); process.exit(2); }
  for (const f of JSON.parse(m[1]).slice(1, -1)) console.log(f);
' "$repo/src/reconciler/Dockerfile")
[ "${#flags[@]}" -gt 0 ] || { echo "build-image.sh: no node flags read from the Dockerfile" >&2; exit 2; }
entrypoint=(--config.entrypoint /usr/local/bin/node)
for f in "${flags[@]}"; do entrypoint+=(--config.entrypoint "$f"); done
entrypoint+=(--config.entrypoint /app/lib/src/reconciler/main.js)

umoci config --image "$out:$tag" \
  --created 1970-01-01T00:00:00Z --os linux --architecture "$arch" \
  --config.user 65532:65532 --config.workingdir /app \
  --config.env NODE_ENV=production \
  "${entrypoint[@]}" \
  --config.label org.opencontainers.image.title=prewarm-reconciler \
  --no-history
umoci gc --layout "$out"
echo "$out:$tag"
