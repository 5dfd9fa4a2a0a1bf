#!/usr/bin/env bash
# Builds the kstatus CLI (main.go: sigs.k8s.io/cli-utils' status computation
# over one object read on stdin) from the Go module proxy into a cache outside
# the repository, keyed by the pinned cli-utils version. Prints the bin dir.
#
#   tools/kstatus/build.sh          build if missing, print bin dir
#   tools/kstatus/build.sh --print  print bin dir only, build nothing
#
# REGULON_CACHE_DIR overrides the cache root (default ~/.cache/regulon).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

# main.go is part of what is built, so its hash is part of the key: an edit
# rebuilds instead of reusing a binary of the old source.
src_hash="$(cat "$here/main.go" "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)"
key="kstatus-cli-utils-${CLI_UTILS_VERSION}-${src_hash}_$(go env GOOS)-$(go env GOARCH)"
cache_root="${REGULON_CACHE_DIR:-$HOME/.cache/regulon}/kstatus"
bin="$cache_root/$key/bin"

complete() { [ -x "$bin/kstatus" ]; }

# shellcheck source=../lib/cached-build.sh
source "$here/../lib/cached-build.sh"
begin_cached_build "$@"
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

echo "[kstatus] building kstatus (cli-utils $CLI_UTILS_VERSION)" >&2
(cd "$here" && go build -trimpath -ldflags "-s -w" -o "$staging/kstatus" .) >&2

finish_cached_build kstatus
