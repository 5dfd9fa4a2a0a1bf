# shellcheck shell=bash
# Builds one image from its recipe (tools/images/recipes/<name>.sh) into
# "$staging": image.oci.tar, an OCI image layout in a tar that
# `ctr images import` loads under the recipe's ref, and image.json
# describing it. Sourced by build.sh, which owns the cache and the lock.
#
# A recipe sets:
#   tag            the image tag: the release series of main_package (checked)
#   main_package   the package whose version the tag names
#   packages       Debian packages to install (with their hard dependencies)
#   dpkg_options   more dpkg path-exclude/-include filters for this image
#   variant        mmdebstrap variant: essential (dpkg, no apt) or extract
#                  (unpack only, no maintainer scripts)
#   users          "name:uid:gid:gecos:home:shell" entries written before any
#                  package's maintainer scripts run, so the packages adopt
#                  these fixed ids instead of picking their own
#   run_as         the config's User ("uid:gid")
#   entrypoint cmd env workdir ports   the rest of the OCI config
#   layer_paths    what the layer holds (default: the whole root filesystem)
#   finalize ROOT  a function that trims the unpacked root filesystem

images_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=../debian.env
source "$images_dir/debian.env"
export SOURCE_DATE_EPOCH

image_log() { echo "[images] $*" >&2; }

# The files whose content decides an image: its recipe, this builder and the
# shared Debian settings. Their hash is the image's cache key.
recipe_inputs() {
  echo "$images_dir/recipes/$1.sh" "$images_dir/lib/image.sh" "$images_dir/debian.env"
}

recipe_hash() {
  local f
  # shellcheck disable=SC2046 # one path per word, none with spaces
  for f in $(recipe_inputs "$1"); do
    printf '%s\n' "${f#"$images_dir"/}"
    cat "$f"
  done | sha256sum | cut -c1-16
}

# build_image NAME STAGING. The recipe's variables become globals that the
# steps below read: call it in a subshell (build.sh runs one per image), so
# that one recipe never leaks into the next.
build_image() {
  name="$1" staging="$2"
  tag='' main_package='' variant=essential run_as='' workdir='/'
  packages=() dpkg_options=() users=() entrypoint=() cmd=() env=() ports=() layer_paths=(.)
  finalize() { :; }
  # shellcheck source=/dev/null
  source "$images_dir/recipes/$name.sh"
  local ref="regulon.local/$name:$tag" started
  started=$(date +%s)

  image_log "$ref: mmdebstrap $DEBIAN_SUITE --variant=$variant ${packages[*]}"
  bootstrap
  local root="$staging/rootfs"
  mkdir "$root"
  tar -C "$root" --numeric-owner --xattrs --xattrs-include='*' -xpf "$staging/rootfs.tar"
  rm "$staging/rootfs.tar"
  trim_common "$root"
  finalize "$root"
  check_users "$root"

  local version
  version="$(awk -v p="$main_package" '$1 == p { print $2 }' "$staging/packages.tsv")"
  check_tag "$version"

  pack_layer "$root" "$staging/layer.tar"
  rm -rf --one-file-system "$root"
  make_oci "$ref" "$version"
  write_manifest "$ref" "$version" "$(($(date +%s) - started))"
  rm -rf "$staging/layer.tar" "$staging/oci" "$staging/packages.tsv" "$staging/passwd.add" "$staging/group.add"
}

# mmdebstrap into a tarball: its chroot lives in its own temporary directory
# (with /proc, /sys and /dev mounted while maintainer scripts run); only the
# finished tarball lands in staging, so nothing under staging is ever a mount.
bootstrap() {
  local -a opts=(
    --variant="$variant" --mode=root --format=tar
    --aptopt='APT::Install-Recommends "false"'
    # A mirror served from a dated snapshot has an expired Valid-Until.
    --aptopt='Acquire::Check-Valid-Until "false"'
  )
  local o
  for o in "${DPKG_EXCLUDES[@]}" "${dpkg_options[@]}"; do opts+=(--dpkgopt="$o"); done
  [ ${#packages[@]} -gt 0 ] && opts+=(--include="${packages[*]}")
  if [ ${#users[@]} -gt 0 ]; then
    users_files "$staging"
    opts+=(--essential-hook="cat '$staging/passwd.add' >> \"\$1/etc/passwd\"; cat '$staging/group.add' >> \"\$1/etc/group\"")
  fi
  # Package versions for image.json and the tag check. The extract variant has
  # no dpkg database: read the downloaded packages instead.
  if [ "$variant" = extract ]; then
    opts+=(--extract-hook="for d in \"\$1\"/var/cache/apt/archives/*.deb; do dpkg-deb -W --showformat='\${Package}\t\${Version}\n' \"\$d\"; done > '$staging/packages.tsv'")
  else
    opts+=(--customize-hook="dpkg-query --admindir=\"\$1/var/lib/dpkg\" -W -f='\${Package}\t\${Version}\n' > '$staging/packages.tsv'")
  fi
  mmdebstrap "${opts[@]}" "$DEBIAN_SUITE" "$staging/rootfs.tar" "${DEBIAN_MIRRORS[@]}" >&2
}

users_files() {
  local u name uid gid gecos home shell
  : >"$1/passwd.add"
  : >"$1/group.add"
  for u in "${users[@]}"; do
    IFS=: read -r name uid gid gecos home shell <<<"$u"
    echo "$name:x:$uid:$gid:$gecos:$home:$shell" >>"$1/passwd.add"
    echo "$name:x:$gid:" >>"$1/group.add"
  done
}

# The maintainer scripts must have kept the ids the recipe chose.
check_users() {
  local u name uid gid got
  for u in "${users[@]}"; do
    IFS=: read -r name uid gid _ <<<"$u"
    got="$(awk -F: -v n="$name" '$1 == n { print $3 ":" $4 }' "$1/etc/passwd")"
    if [ "$got" != "$uid:$gid" ]; then
      image_log "$name: user $name is '$got' in the image, the recipe wants $uid:$gid"
      return 1
    fi
  done
}

# The tag names a release series (15, 10.11, 7.0): the installed version,
# without its epoch, must be in it.
check_tag() {
  local upstream="${1#*:}"
  case "$upstream" in
    "$tag".* | "$tag"-* | "$tag") ;;
    *)
      image_log "$name: $main_package is '$1', which is not in the series of tag $tag; update the recipe's tag"
      return 1
      ;;
  esac
}

# What no image needs, whatever its packages: mmdebstrap's device nodes
# (runtimes mount their own /dev), the build host's name and resolver (the
# runtime writes both), apt's and dpkg's logs and caches.
trim_common() {
  find "$1/dev" -mindepth 1 -delete
  rm -f "$1/etc/hostname" "$1/etc/resolv.conf"
  rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/apt "$1"/var/cache/debconf/*-old
}

# The same flags mmdebstrap's own tarballs use: sorted, clamped mtimes, numeric
# owners, no atime/ctime, so that the same files give the same layer digest.
pack_layer() {
  (cd "$1" && tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime --numeric-owner \
    --one-file-system --format=pax --xattrs \
    --pax-option='exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime' \
    -cf "$2" "${layer_paths[@]}")
}

# umoci writes the OCI layout: an empty image, the layer (compressed by umoci),
# then the config. The tag is the full ref, which containerd's importer keeps
# as the image name.
make_oci() {
  local ref="$1" version="$2" oci="$staging/oci" created
  created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
  umoci init --layout "$oci"
  umoci new --image "$oci:$ref"
  umoci raw add-layer --image "$oci:$ref" --history.created "$created" \
    --history.created_by "mmdebstrap --variant=$variant $DEBIAN_SUITE ${packages[*]}" "$staging/layer.tar"
  local -a cfg=(--no-history --created "$created" --config.workingdir "$workdir"
    --config.label "org.opencontainers.image.title=$name"
    --config.label "org.opencontainers.image.version=$version"
    --config.label "org.opencontainers.image.source=tools/images/recipes/$name.sh"
    --clear config.entrypoint --clear config.cmd)
  [ -n "$run_as" ] && cfg+=(--config.user "$run_as")
  local x
  for x in "${entrypoint[@]}"; do cfg+=(--config.entrypoint "$x"); done
  for x in "${cmd[@]}"; do cfg+=(--config.cmd "$x"); done
  for x in "${env[@]}"; do cfg+=(--config.env "$x"); done
  for x in "${ports[@]}"; do cfg+=(--config.exposedports "$x"); done
  umoci config --image "$oci:$ref" "${cfg[@]}"
  umoci gc --layout "$oci"
  (cd "$oci" && tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    --mode='a+r' --format=pax --pax-option='exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime' \
    -cf "$staging/image.oci.tar" oci-layout index.json blobs)
}

write_manifest() {
  local ref="$1" version="$2" seconds="$3" digest size
  digest="$(jq -r '.manifests[0].digest' "$staging/oci/index.json")"
  size="$(stat -c %s "$staging/image.oci.tar")"
  jq -n --arg name "$name" --arg ref "$ref" --arg digest "$digest" --argjson size "$size" \
    --arg version "$version" --arg user "$run_as" --arg recipe "$(recipe_hash "$name")" \
    --argjson seconds "$seconds" --rawfile packages "$staging/packages.tsv" \
    '{name: $name, ref: $ref, digest: $digest, size: $size, version: $version, user: $user,
      recipeHash: $recipe, buildSeconds: $seconds,
      packages: ($packages | split("\n") | map(select(length > 0) | split("\t") | {(.[0]): .[1]}) | add)}' \
    >"$staging/image.json"
  image_log "$ref: $(numfmt --to=iec "$size") in $seconds s ($digest)"
}
