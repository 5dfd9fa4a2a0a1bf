// Package tools pins the k8s.io/kubernetes module so that `go build` can build
// kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and
// the real node's kubelet and kube-proxy from the Go module proxy. The binaries are built from their upstream cmd packages; this
// file only keeps the imports in the module graph.
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
)
