#!/usr/bin/env bash
# Builds the test images from Debian packages (one recipe per image in
# recipes/) into OCI archives cached outside the repository, keyed by a hash
# of each recipe's inputs. Prints one archive path per image asked for.
#
#   tools/images/build.sh [NAME...]          build the missing ones (default: all)
#   tools/images/build.sh --print [NAME...]  print the archive paths, build nothing
#   tools/images/build.sh --needs            print the Debian packages a build needs
#   tools/images/build.sh --list             print the image names
#
# Load one: ctr -n k8s.io images import <archive>   (named regulon.local/NAME:TAG)
# REGULON_CACHE_DIR overrides the cache root (default ~/.cache/regulon).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib/image.sh
source "$here/lib/image.sh"

# What a build runs besides Debian's essential packages (tar, coreutils...).
needs=(mmdebstrap umoci jq)
cache_root="${REGULON_CACHE_DIR:-$HOME/.cache/regulon}/images"

all_names() { (cd "$here/recipes" && for f in *.sh; do echo "${f%.sh}"; done); }

archive_dir() { echo "$cache_root/$1-$(recipe_hash "$1")"; }

print_only=false
case "${1:-}" in
  --needs) printf '%s\n' "${needs[@]}"; exit 0 ;;
  --list) all_names; exit 0 ;;
  --print) print_only=true; shift ;;
  -*) echo "usage: $0 [--print] [NAME...] | --needs | --list" >&2; exit 2 ;;
esac

names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names < <(all_names)
for n in "${names[@]}"; do
  if [ ! -f "$here/recipes/$n.sh" ]; then
    echo "[images] no recipe for image '$n'; known: $(all_names | paste -sd ' ')" >&2
    exit 2
  fi
done

if ! $print_only; then
  missing=()
  for tool in "${needs[@]}"; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "[images] building images needs the Debian packages: ${missing[*]}" >&2
    echo "[images] install them as root: apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi

for n in "${names[@]}"; do
  bin="$(archive_dir "$n")"
  if ! $print_only; then
    # One image per subshell: cached-build.sh exits when the image is already
    # there and holds the machine-wide lock while it builds.
    (
      # shellcheck disable=SC2317 # called by cached-build.sh
      complete() { [ -s "$bin/image.oci.tar" ] && [ -s "$bin/image.json" ]; }
      # shellcheck source=../lib/cached-build.sh
      source "$here/../lib/cached-build.sh"
      # shellcheck disable=SC2119 # no --print here: build.sh handles it for every image
      begin_cached_build
      build_image "$n" "$staging"
      finish_cached_build "images $n"
    ) >/dev/null
  fi
  echo "$bin/image.oci.tar"
done
