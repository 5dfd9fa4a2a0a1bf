#!/usr/bin/env bash
# Builds the local control plane (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd, kwok) from the Go module proxy into a cache
# outside the repository, keyed by the pinned versions. Prints the bin dir.
#
#   tools/control-plane/build.sh          build if missing, print bin dir
#   tools/control-plane/build.sh --print  print bin dir only, build nothing
#   tools/control-plane/build.sh --check  print bin dir if built, else exit 3
#
# REGULON_CACHE_DIR overrides the cache root (default ~/.cache/regulon).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

command -v go >/dev/null || {
  echo "[control-plane] needs Go on PATH (https://go.dev/dl/; any Go >= 1.21 fetches the toolchain the go.mod files ask for)" >&2
  exit 1
}
goos="$(go env GOOS)"
goarch="$(go env GOARCH)"
key="k8s-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_${goos}-${goarch}"
cache_root="${REGULON_CACHE_DIR:-$HOME/.cache/regulon}/control-plane"
bin="$cache_root/$key/bin"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok)

complete() {
  for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || return 1; done
  [ -f "$bin/kwok-stages.yaml" ] && [ -f "$bin/kwok-storageclass.yaml" ]
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

log() { echo "[control-plane] $*" >&2; }

log "building kubernetes $KUBERNETES_VERSION (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)"
(cd "$here/kubernetes" && go build -trimpath -ldflags "$kube_ldflags" -o "$staging/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubectl) >&2

log "building etcd $ETCD_VERSION"
(cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$staging/etcd" .) >&2

log "building kwok $KWOK_VERSION"
(cd "$here/kwok" && go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" \
  -o "$staging/kwok" sigs.k8s.io/kwok/cmd/kwok) >&2

# KWOK does nothing without Stage objects. Use the stages shipped in the pinned
# kwok module (the ones kwokctl uses): nodes become Ready and renew Leases; pods
# become Ready, Job pods complete, deleted pods go away; PVCs of the kwok-volume
# StorageClass get a PersistentVolume and bind.
stage_dir="$(cd "$here/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage"
for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
  pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml \
  volume/fast/pvc-provision.yaml volume/fast/pv-bind.yaml volume/fast/pvc-delete.yaml volume/fast/pv-delete.yaml; do
  cat "$stage_dir/$f"
  echo "---"
done > "$staging/kwok-stages.yaml"
cp "$stage_dir/volume/fast/storage-class.yaml" "$staging/kwok-storageclass.yaml"

finish_cached_build control-plane
