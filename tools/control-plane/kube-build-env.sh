# shellcheck shell=bash
# What every build of a k8s.io/kubernetes binary here shares (build.sh for the
# control plane, build-node.sh for the node): static binaries from the pinned
# modules, and the version the binaries report (`kubectl version`, the
# kubelet's node info), which `go build` of a module can't stamp by itself.
# Needs KUBERNETES_VERSION (versions.env); sets kube_ldflags.

# GOTOOLCHAIN=auto lets an older Go fetch the toolchain the go.mod files ask for.
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"

minor="${KUBERNETES_VERSION#v1.}"; minor="${minor%%.*}"
build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done
