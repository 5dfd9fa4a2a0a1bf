#!/usr/bin/env bash
# Builds the manager image from apps/manager/Dockerfile itself, without Docker
# and without a registry: buildah runs the Dockerfile's real steps (COPY, RUN
# npm ci, RUN apt-get install tini) on a local stand-in for its FROM image
# (node-base.sh, from Debian packages plus this repository's Node binary and
# the npm that Node release ships). Prints the OCI archive's path; the archive
# is named regulon.local/manager:<apps/manager version>.
#
#   tools/manager-image/build.sh           build if missing, print the archive
#   tools/manager-image/build.sh --print   print the archive path, build nothing
#   tools/manager-image/build.sh --needs   print the Debian packages a build needs
#
# Cached by content under ${REGULON_CACHE_DIR:-~/.cache/regulon}/images: the
# base by its recipe, the Node binary and npm's version; the manager by the
# build context (after Dockerfile.dockerignore), the Dockerfile and the base.
# RUN steps reach the npm registry and the Debian mirror from the host network.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
dockerfile="$repo/apps/manager/Dockerfile"
ignorefile="$repo/apps/manager/Dockerfile.dockerignore"
# The Node binary `npx node` runs: the root devDependency `node`.
node_bin="$repo/node_modules/node/bin/node"
needs=(buildah mmdebstrap umoci jq)
# The npm that Node 24.21.0 ships (its changelog: "upgrade npm to 11.19.0" in
# 24.20.0, none since). Bump with the Dockerfile's NODE_VERSION.
NPM_VERSION=11.19.0
cache_root="${REGULON_CACHE_DIR:-$HOME/.cache/regulon}/images"

case "${1:-}" in
  --needs) printf '%s\n' "${needs[@]}"; exit 0 ;;
  --print | '') ;;
  *) echo "usage: $0 [--print | --needs]" >&2; exit 2 ;;
esac

NODE_VERSION="$(sed -n 's/^ARG NODE_VERSION=//p' "$dockerfile")"
got="$("$node_bin" --version)"
if [ "$got" != "v$NODE_VERSION" ]; then
  echo "[manager-image] $dockerfile builds on Node $NODE_VERSION but node_modules has $got:" \
    "bump ARG NODE_VERSION (and NPM_VERSION in $0) or the root devDependency 'node'" >&2
  exit 1
fi
export NODE_VERSION NPM_VERSION
manager_version="$(jq -r .version "$repo/apps/manager/package.json")"
ref="regulon.local/manager:$manager_version"

# shellcheck source=../images/lib/image.sh
source "$repo/tools/images/lib/image.sh"

base_hash() {
  {
    cat "$here/node-base.sh" "$repo/tools/images/lib/image.sh" "$repo/tools/images/debian.env"
    echo "node $NODE_VERSION $(sha256sum <"$node_bin") npm $NPM_VERSION"
  } | sha256sum | cut -c1-16
}
base_dir="$cache_root/node-base-$(base_hash)"
manager_hash="$(
  {
    "$node_bin" "$here/context.ts" "$repo" "$ignorefile"
    cat "$dockerfile" "$ignorefile" "$here/build.sh"
    echo "$base_dir"
  } | sha256sum | cut -c1-16
)"
bin="$cache_root/manager-$manager_hash"

# shellcheck disable=SC2317 # called by cached-build.sh
complete() { [ -s "$bin/image.oci.tar" ] && [ -s "$bin/image.json" ]; }
if [ "${1:-}" = --print ] || complete; then
  echo "$bin/image.oci.tar"
  exit 0
fi

missing=()
for tool in "${needs[@]}"; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[manager-image] building the manager image needs the Debian packages: ${missing[*]}" >&2
  echo "[manager-image] install them as root: apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

# The stand-in base, a tools/images-style build with its own cache entry.
build_base() {
  local staging="$1" root started
  started=$(date +%s)
  # shellcheck disable=SC2034 # the globals tools/images/lib/image.sh reads
  name=node-base tag='' main_package='' variant=essential run_as='' workdir='/'
  packages=() dpkg_options=() users=() entrypoint=() cmd=() env=() ports=() layer_paths=(.)
  NODE_BINARY="$node_bin"
  NPM_TARBALL="$staging/npm.tgz"
  (cd "$staging" && npm pack --silent "npm@$NPM_VERSION" >/dev/null && mv "npm-$NPM_VERSION.tgz" npm.tgz)
  # shellcheck source=node-base.sh
  source "$here/node-base.sh"
  image_log "node-base: mmdebstrap $DEBIAN_SUITE --variant=$variant ${packages[*]} + node $NODE_VERSION, npm $NPM_VERSION"
  bootstrap
  root="$staging/rootfs"
  mkdir "$root"
  tar -C "$root" --numeric-owner --xattrs --xattrs-include='*' -xpf "$staging/rootfs.tar"
  rm "$staging/rootfs.tar"
  trim_common "$root"
  finalize "$root"
  rm "$NPM_TARBALL"
  check_users "$root"
  pack_layer "$root" "$staging/layer.tar"
  rm -rf --one-file-system "$root"
  make_oci "docker.io/library/node:$tag" "$NODE_VERSION"
  jq -n --arg ref "docker.io/library/node:$tag" --arg node "$NODE_VERSION" --arg npm "$NPM_VERSION" \
    --argjson seconds "$(($(date +%s) - started))" --rawfile packages "$staging/packages.tsv" \
    '{ref: $ref, standIn: true, node: $node, npm: $npm, buildSeconds: $seconds,
      packages: ($packages | split("\n") | map(select(length > 0) | split("\t") | {(.[0]): .[1]}) | add)}' \
    >"$staging/image.json"
  rm -rf "$staging/layer.tar" "$staging/oci" "$staging/packages.tsv" "$staging/passwd.add" "$staging/group.add"
}

if [ ! -s "$base_dir/image.oci.tar" ]; then
  (
    bin="$base_dir"
    # shellcheck disable=SC2317 # called by cached-build.sh
    complete() { [ -s "$bin/image.oci.tar" ] && [ -s "$bin/image.json" ]; }
    # shellcheck source=../lib/cached-build.sh
    source "$repo/tools/lib/cached-build.sh"
    begin_cached_build
    build_base "$staging"
    finish_cached_build "manager-image node-base"
  ) >/dev/null
fi

build_manager() {
  local started digest size
  # buildah's storage is private to this build and removed with it: nothing of
  # it outlives the build, and no mount is left behind (vfs mounts nothing; the
  # RUN steps' bind mounts are buildah's own and undone when each step ends).
  store="$(mktemp -d "$cache_root/.buildah.XXXXXX")"
  trap 'remove_store; rm -rf "$staging"' EXIT
  started=$(date +%s)
  image_log "$ref: buildah build -f apps/manager/Dockerfile (FROM the stand-in node:$NODE_VERSION-bookworm-slim)"
  bah pull --quiet "oci-archive:$base_dir/image.oci.tar" >"$store/base-id"
  bah tag "$(cat "$store/base-id")" "docker.io/library/node:$NODE_VERSION-bookworm-slim"
  local -a mounts=()
  # A machine whose egress re-signs TLS (a proxy's own CA, which the host's
  # Node trusts through NODE_EXTRA_CA_CERTS) must lend that trust to npm in the
  # RUN steps: root's home, where npm reads .npmrc and keeps its cache, is a
  # directory of the store while a RUN step runs. The base image has /root, so
  # nothing of the mount (no CA, no npmrc, no placeholder) reaches a layer.
  local ca="${NODE_EXTRA_CA_CERTS:-}"
  if [ -n "$ca" ] && [ -s "$ca" ]; then
    mkdir -m 0700 "$store/home"
    cp "$ca" "$store/home/build-ca.crt"
    echo "cafile=/root/build-ca.crt" >"$store/home/.npmrc"
    mounts+=(--volume "$store/home:/root")
  fi
  bah build --pull=never --isolation chroot --network host --layers=false "${mounts[@]}" \
    --ignorefile "$ignorefile" -f "$dockerfile" --tag "$ref" "$repo" >&2
  bah push --quiet "$ref" "oci-archive:$staging/image.oci.tar:$ref" >&2
  remove_store
  digest="$(tar -xOf "$staging/image.oci.tar" index.json | jq -r '.manifests[0].digest')"
  size="$(stat -c %s "$staging/image.oci.tar")"
  jq -n --arg ref "$ref" --arg digest "$digest" --argjson size "$size" --arg node "$NODE_VERSION" \
    --arg base "$base_dir" --argjson seconds "$(($(date +%s) - started))" \
    '{name: "manager", ref: $ref, digest: $digest, size: $size, node: $node, base: $base, buildSeconds: $seconds}' \
    >"$staging/image.json"
  image_log "$ref: $(numfmt --to=iec "$size") in $(($(date +%s) - started)) s ($digest)"
}

bah() { buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs "$@"; }

remove_store() {
  [ -d "${store:-}" ] || return 0
  bah rm --all >/dev/null 2>&1 || true
  local m
  # Whatever a killed RUN step left mounted under the store, deepest first.
  while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(
    awk -v p="$store" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | sort -r
  )
  rm -rf --one-file-system "$store"
}

(
  # shellcheck source=../lib/cached-build.sh
  source "$repo/tools/lib/cached-build.sh"
  begin_cached_build
  build_manager
  finish_cached_build manager-image
) >/dev/null
echo "$bin/image.oci.tar"
