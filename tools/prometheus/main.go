// Package tools pins the Prometheus server and promtool (Prometheus 3.16; the
// module proxy serves Prometheus v3.X.Y as v0.3XX.Y) so that both can be built
// from the Go module proxy with a go.sum we check in. The tests check the
// shipped alerts and dashboard against them (tools/scripts/*.test.ts).
//go:build tools

package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
