// Package tools pins sigs.k8s.io/kwok so that its controller (cmd/kwok) can be
// built from the Go module proxy with a go.sum we check in.
//go:build tools

package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
