#!/usr/bin/env bash
# Builds bundle-validate (main.go: `operator-sdk bundle validate`'s checks, run
# by the library that command uses, github.com/operator-framework/api) from the
# Go module proxy into a cache outside the repository. Prints the bin dir.
#
#   tools/olm/build.sh          build if missing, print bin dir
#   tools/olm/build.sh --print  print bin dir only, build nothing
#
# REGULON_CACHE_DIR overrides the cache root (default ~/.cache/regulon).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

# main.go is part of what is built, so its hash is part of the key: an edit
# rebuilds instead of reusing a binary of the old source.
src_hash="$(cat "$here/main.go" "$here/go.mod" "$here/go.sum" | sha256sum | cut -c1-12)"
key="bundle-validate-api-${OPERATOR_FRAMEWORK_API_VERSION}-${src_hash}_$(go env GOOS)-$(go env GOARCH)"
cache_root="${REGULON_CACHE_DIR:-$HOME/.cache/regulon}/olm"
bin="$cache_root/$key/bin"

complete() { [ -x "$bin/bundle-validate" ]; }

# shellcheck source=../lib/cached-build.sh
source "$here/../lib/cached-build.sh"
begin_cached_build "$@"
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

echo "[olm] building bundle-validate (operator-framework/api $OPERATOR_FRAMEWORK_API_VERSION)" >&2
(cd "$here" && go build -trimpath -ldflags "-s -w" -o "$staging/bundle-validate" .) >&2

finish_cached_build olm
