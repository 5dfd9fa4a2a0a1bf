// Command kstatus prints what sigs.k8s.io/cli-utils' kstatus library (the
// status computation Flux and kpt use to decide whether an applied object is
// done) makes of one object. It reads the object as JSON on stdin and writes
// one line of JSON: {"status":"Current|InProgress|Failed|Terminating","message":"..."}.
//
// The tests feed it the live Database, Cache and MyApp objects, so the claim
// "Flux would see this as Failed" is checked against the library itself, not
// against a re-implementation of its rules.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sjson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type output struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kstatus:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	raw, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	// apimachinery's decoder keeps integers as int64, as kstatus reads
	// metadata.generation; encoding/json would make them float64.
	obj := map[string]any{}
	if err := k8sjson.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("stdin is not a JSON object: %w", err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: obj})
	if err != nil {
		return fmt.Errorf("computing status: %w", err)
	}
	return json.NewEncoder(out).Encode(output{Status: res.Status.String(), Message: res.Message})
}
