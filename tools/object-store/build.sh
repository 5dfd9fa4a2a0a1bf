#!/usr/bin/env bash
# Builds versitygw (an S3-compatible gateway; testenv serves it over its POSIX
# backend) from the Go module proxy into a cache outside the repository, keyed
# by the pinned version. Prints the bin dir.
#
#   tools/object-store/build.sh          build if missing, print bin dir
#   tools/object-store/build.sh --print  print bin dir only, build nothing
#
# REGULON_CACHE_DIR overrides the cache root (default ~/.cache/regulon).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

key="versitygw-${VERSITYGW_VERSION}_$(go env GOOS)-$(go env GOARCH)"
cache_root="${REGULON_CACHE_DIR:-$HOME/.cache/regulon}/object-store"
bin="$cache_root/$key/bin"

complete() { [ -x "$bin/versitygw" ]; }

# shellcheck source=../lib/cached-build.sh
source "$here/../lib/cached-build.sh"
begin_cached_build "$@"
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

# The variables upstream's Makefile sets; `versitygw --version` reports them.
ldflags="-s -w -X=main.Version=$VERSITYGW_VERSION -X=main.Build=$VERSITYGW_VERSION -X=main.BuildTime=none"
echo "[object-store] building versitygw $VERSITYGW_VERSION" >&2
(cd "$here" && go build -trimpath -ldflags "$ldflags" -o "$staging/" \
  github.com/versity/versitygw/cmd/versitygw) >&2

finish_cached_build object-store
