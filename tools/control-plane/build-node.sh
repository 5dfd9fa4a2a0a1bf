#!/usr/bin/env bash
# Builds what a real node runs besides its Debian packages: kubelet and
# kube-proxy from the same k8s.io/kubernetes module and replaces as the control
# plane, and CoreDNS for cluster DNS. Cached outside the repository, keyed by
# the pinned versions, beside the control plane. Prints the bin dir.
#
#   tools/control-plane/build-node.sh          build if missing, print bin dir
#   tools/control-plane/build-node.sh --print  print bin dir only, build nothing
#   tools/control-plane/build-node.sh --check  print bin dir if built, else exit 3
#
# A separate cache entry from build.sh: the KWOK-only control plane of scale
# tests and `npm start` does not wait for these.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

command -v go >/dev/null || {
  echo "[node] needs Go on PATH (https://go.dev/dl/; any Go >= 1.21 fetches the toolchain the go.mod files ask for)" >&2
  exit 1
}
goos="$(go env GOOS)"
goarch="$(go env GOARCH)"
key="node_k8s-${KUBERNETES_VERSION}_coredns-${COREDNS_VERSION}_${goos}-${goarch}"
cache_root="${REGULON_CACHE_DIR:-$HOME/.cache/regulon}/control-plane"
bin="$cache_root/$key/bin"
binaries=(kubelet kube-proxy coredns)

complete() {
  for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || return 1; done
}

# How an installed @regulon/testenv's start() finds what `regulon-testenv
# install` built, without ever starting a build inside a test.
if [ "${1:-}" = "--check" ]; then
  complete || exit 3
  echo "$bin"
  exit 0
fi

# shellcheck source=../lib/cached-build.sh
source "$here/../lib/cached-build.sh"
begin_cached_build "$@"
# shellcheck source=kube-build-env.sh
source "$here/kube-build-env.sh"

log() { echo "[node] $*" >&2; }

log "building kubernetes $KUBERNETES_VERSION (kubelet, kube-proxy)"
(cd "$here/kubernetes" && go build -trimpath -ldflags "$kube_ldflags" -o "$staging/" \
  k8s.io/kubernetes/cmd/kubelet \
  k8s.io/kubernetes/cmd/kube-proxy) >&2

log "building coredns $COREDNS_VERSION"
(cd "$here/coredns" && go build -trimpath -ldflags "-s -w" -o "$staging/coredns" .) >&2

finish_cached_build node
