#!/usr/bin/env bash
# Builds Helm (helm.sh/helm/v3/cmd/helm) from the Go module proxy into a cache
# outside the repository, keyed by the pinned version. Prints the bin dir.
#
#   tools/helm/build.sh          build if missing, print bin dir
#   tools/helm/build.sh --print  print bin dir only, build nothing
#
# REGULON_CACHE_DIR overrides the cache root (default ~/.cache/regulon).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

key="helm-${HELM_VERSION}_$(go env GOOS)-$(go env GOARCH)"
cache_root="${REGULON_CACHE_DIR:-$HOME/.cache/regulon}/helm"
bin="$cache_root/$key/bin"

complete() { [ -x "$bin/helm" ]; }

# shellcheck source=../lib/cached-build.sh
source "$here/../lib/cached-build.sh"
begin_cached_build "$@"
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

# `helm version` reports the pinned version, not v3-dev.
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}"
echo "[helm] building helm $HELM_VERSION" >&2
(cd "$here" && go build -trimpath -ldflags "$ldflags" -o "$staging/helm" helm.sh/helm/v3/cmd/helm) >&2

finish_cached_build helm
