// Package tools pins Helm (cmd/helm) so that it is built from the Go module
// proxy with a go.sum we check in. The chart tests (tools/scripts/helm*.test.ts)
// lint and render deploy/helm/regulon with it.
//go:build tools

package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
