# Shared by harness/cluster/build.sh and harness/argocd/build.sh (sourced, never run): how the
# harness builds a Go component from a wrapper module, cached by recipe under
# ${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}/<name>-<version>/bin.
#
# A component is a cache hit only when its .complete stamp carries the key of its recipe (Go
# version, flags, tags, packages, every .go file and the module files of its wrapper module) and its
# bin/ is not empty: two concurrent builds once left a stamp and no bin/. One build per component
# at a time: a second caller waits on the component's lock, then finds the result or builds it.

CACHE="${PREWARM_CACHE_DIR:-$HOME/.cache/prewarm}"
export GOCACHE="$CACHE/go/cache" GOMODCACHE="$CACHE/go/mod"
# No DWARF: the binaries are stripped (-s -w) anyway, and compiling it is work for nothing.
export GOFLAGS="-mod=readonly -buildvcs=false -trimpath -gcflags=all=-dwarf=false"
# Keep memory in check on a 2-core CI machine: two compile jobs, GC a bit more eagerly.
JOBS="${PREWARM_BUILD_JOBS:-2}"
export GOMAXPROCS="${GOMAXPROCS:-2}" GOGC="${PREWARM_BUILD_GOGC:-75}"
command -v go >/dev/null || { echo "build: go not found on PATH" >&2; exit 1; }

# component_dir NAME VERSION: where a component's bin/, stamp and lock live.
component_dir() { printf '%s\n' "$CACHE/$1-$2"; }

build_log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# recipe_key MODULE_DIR TAGS CGO LDFLAGS PKG...: what a component's binaries are a function of.
recipe_key() {
  local moddir="$1" tags="$2"; shift 2
  local files=()
  mapfile -t files < <(find "$moddir" -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort)
  { go version; echo "$GOFLAGS $tags $*"; cat "${files[@]}"; } | sha256sum | cut -c1-16
}

# build_cached NAME VERSION MODULE_DIR TAGS CGO LDFLAGS PKG...
# Builds PKG... in MODULE_DIR into $CACHE/NAME-VERSION/bin unless the cache has this recipe. A
# function named in POST_BUILD, if set, runs on the fresh bin folder before it is published.
build_cached() {
  local name="$1" version="$2" moddir="$3" tags="$4" cgo="$5" ldflags="$6"; shift 6
  local out key lock tmp t0
  out="$(component_dir "$name" "$version")"
  key="$(recipe_key "$moddir" "$tags" "$cgo" "$ldflags" "$@")"
  mkdir -p "$out"
  exec {lock}>"$out/.lock"
  flock "$lock"
  if [[ -f "$out/.complete" ]] && grep -q "^key=$key " "$out/.complete" && [[ -n "$(ls -A "$out/bin" 2>/dev/null)" ]]; then
    build_log "$name $version: cached at $out/bin"; flock -u "$lock"; return 0
  fi
  rm -f "$out/.complete"
  tmp="$(mktemp -d "$out/bin.tmp.XXXXXX")"
  build_log "$name $version: building $* (CGO_ENABLED=$cgo, -p $JOBS)"
  t0=$SECONDS
  if ! (cd "$moddir" && CGO_ENABLED="$cgo" go build -p "$JOBS" -tags "$tags" -ldflags "-s -w $ldflags" -o "$tmp/" "$@"); then
    rm -rf "$tmp"; flock -u "$lock"; build_log "$name $version: build failed"; return 1
  fi
  if [[ -n "${POST_BUILD:-}" ]]; then "$POST_BUILD" "$name" "$tmp"; fi
  rm -rf "$out/bin" && mv "$tmp" "$out/bin"
  echo "key=$key built $(date -u +%FT%TZ) in $((SECONDS - t0))s" > "$out/.complete"
  build_log "$name $version: done in $((SECONDS - t0))s -> $(ls "$out/bin" | tr '\n' ' ')"
  flock -u "$lock"
}
