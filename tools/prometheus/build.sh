#!/usr/bin/env bash
# Builds Prometheus and promtool from the Go module proxy into a cache outside
# the repository, keyed by the pinned version. Prints the bin dir.
#
#   tools/prometheus/build.sh          build if missing, print bin dir
#   tools/prometheus/build.sh --print  print bin dir only, build nothing
#
# REGULON_CACHE_DIR overrides the cache root (default ~/.cache/regulon).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

# remove_all_sd keeps only static, file and HTTP service discovery: the cloud
# SDKs would double the build time. enable_kubernetes_sd adds Kubernetes' back:
# the in-cluster tests scrape the manager's Pods the way a ServiceMonitor would
# select them. The tags are part of the cache key: other tags, other binary.
tags="remove_all_sd enable_kubernetes_sd"
key="prometheus-${PROMETHEUS_VERSION}_${tags// /+}_$(go env GOOS)-$(go env GOARCH)"
cache_root="${REGULON_CACHE_DIR:-$HOME/.cache/regulon}/prometheus"
bin="$cache_root/$key/bin"

complete() { [ -x "$bin/prometheus" ] && [ -x "$bin/promtool" ]; }

# shellcheck source=../lib/cached-build.sh
source "$here/../lib/cached-build.sh"
begin_cached_build "$@"
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

# Without the builtinassets tag the web UI is left out; the HTTP API is whole.
ver="github.com/prometheus/common/version"
ldflags="-s -w -X $ver.Version=${PROMETHEUS_VERSION#v} -X $ver.Branch=HEAD -X $ver.Revision=$PROMETHEUS_MODULE_VERSION"
echo "[prometheus] building prometheus and promtool $PROMETHEUS_VERSION" >&2
(cd "$here" && go build -trimpath -tags "${tags// /,}" -ldflags "$ldflags" -o "$staging/" \
  github.com/prometheus/prometheus/cmd/prometheus \
  github.com/prometheus/prometheus/cmd/promtool) >&2

finish_cached_build prometheus
