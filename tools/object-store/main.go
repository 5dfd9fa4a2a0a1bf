// Package tools pins versitygw, the S3-compatible gateway testenv serves
// object storage with (startObjectStore in packages/testenv), so that it can
// be built from the Go module proxy with a go.sum we check in.
//go:build tools

package tools

import (
	_ "github.com/versity/versitygw/cmd/versitygw"
)
