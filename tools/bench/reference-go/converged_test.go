package main

import (
	"encoding/json"
	"testing"
)

// The expected text and hash come from packages/runtime/src/converged.ts
// (canonicalJson, appliedHash) for the same value.
func TestCanonicalJSONMatchesTypeScript(t *testing.T) {
	v := map[string]any{
		"b":          int64(1),
		"a":          []any{true, nil, "x\u2028\n\"é\u0001<>&"},
		"é":          0.5,
		"c":          map[string]any{},
		"big":        1e21,
		"small":      1.5e-7,
		"neg":        float64(-3),
		"\U0001F600": int64(1), // above U+FFFF: a surrogate pair in UTF-16, so before U+FFFD
		"\uFFFD":     int64(2),
	}
	want := "{\"a\":[true,null,\"x\u2028\\n\\\"é\\u0001<>&\"],\"b\":1,\"big\":1e+21,\"c\":{},\"neg\":-3,\"small\":1.5e-7,\"é\":0.5,\"\U0001F600\":1,\"\uFFFD\":2}"
	if got := string(canonicalJSON(v)); got != want {
		t.Fatalf("canonicalJSON:\n got %s\nwant %s", got, want)
	}
	if got := appliedHash(v); got != "71a30818f70c5584" {
		t.Fatalf("appliedHash = %s", got)
	}
}

func TestJSNumber(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0", 1: "1", -1: "-1", 0.5: "0.5", 1.5: "1.5", 1e21: "1e+21", 1e20: "100000000000000000000",
		1e-6: "0.000001", 1e-7: "1e-7", 123456789012: "123456789012", 2.5e-10: "2.5e-10", 1.7976931348623157e308: "1.7976931348623157e+308",
	} {
		if got := jsNumber(f); got != want {
			t.Errorf("jsNumber(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestIsSubset(t *testing.T) {
	parse := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	live := parse(`{"spec":{"replicas":3,"ports":[{"port":5432,"protocol":"TCP"}],"extra":true},"status":{}}`)
	cases := []struct {
		desired string
		want    bool
	}{
		{`{"spec":{"replicas":3}}`, true},
		{`{"spec":{"ports":[{"port":5432}]}}`, true}, // extra fields on the live element are fine
		{`{"spec":{"replicas":2}}`, false},
		{`{"spec":{"replicas":"3"}}`, false}, // strict equality: no coercion
		{`{"spec":{"ports":[]}}`, false},     // arrays must have the same length
		{`{"spec":{"missing":null}}`, false}, // absent is not null
		{`{"spec":{"extra":true},"status":{}}`, true},
	}
	for _, c := range cases {
		if got := isSubset(parse(c.desired), live); got != c.want {
			t.Errorf("isSubset(%s) = %v, want %v", c.desired, got, c.want)
		}
	}
	// Numbers compare by value whatever Go type holds them (int64 from ToUnstructured, float64 from JSON).
	if !isSubset(map[string]any{"n": int64(5)}, map[string]any{"n": float64(5)}) {
		t.Error("int64 5 and float64 5 differ")
	}
}

// The same cases as converged.test.ts's "isSubset compares in the form the API server stores".
func TestIsSubsetInStoredForm(t *testing.T) {
	parse := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	redis := `{"spec":{"containers":[{"name":"redis","image":"redis:7"}]}}`
	withEnv := `{"spec":{"containers":[{"name":"redis","env":[{"name":"A","value":"1"}]}]}}`
	resources := `{"spec":{"containers":[{"name":"db","resources":{"requests":{"cpu":"1","memory":"1Gi"},"limits":{"memory":"1073741824"}}}]}}`
	stored := `{"spec":{"requests":{"cpu":"1","memory":"1Gi"},"tag":"1024Mi","n":1024}}`
	cases := []struct {
		desired, live string
		want          bool
	}{
		// What omitempty drops matches an absent value.
		{`{"spec":{"containers":[{"name":"redis","env":[]}]}}`, redis, true},
		{`{"spec":{"containers":[{"name":"redis","args":[],"ports":[]}]}}`, redis, true},
		{`{"metadata":{"labels":{},"annotations":{}}}`, `{}`, true},
		{`{"spec":{"x":{"a":[],"b":{"c":""}},"y":0,"z":false}}`, redis, true},
		// A non-empty value missing, or an empty one where live has a value, is still seen.
		{`{"spec":{"containers":[{"name":"redis","env":[]}]}}`, withEnv, false},
		{`{"spec":{"containers":[{"name":"redis","args":["x"]}]}}`, withEnv, false},
		{`{"spec":{"x":{"a":[1]}}}`, withEnv, false},
		{`{"spec":{"y":0}}`, `{"spec":{"y":3}}`, false},
		{`{"spec":{"z":false}}`, `{"spec":{"z":true}}`, false},
		{`{"spec":{"s":""}}`, `{"spec":{"s":"10.0.0.1"}}`, false},
		// A quantity matches its canonical form, whatever the spelling or type desired.
		{`{"spec":{"containers":[{"name":"db","resources":{"requests":{"cpu":"1000m","memory":"1024Mi"},"limits":{"memory":1073741824}}}]}}`, resources, true},
		{resources, resources, true},
		{`{"requests":{"storage":"1024Mi"}}`, `{"requests":{"storage":"1Gi"}}`, true},
		// Milli rounding for requests and limits, nano precision elsewhere.
		{`{"requests":{"cpu":"100u"}}`, `{"requests":{"cpu":"1m"}}`, true},
		{`{"emptyDir":{"sizeLimit":"100u"}}`, `{"emptyDir":{"sizeLimit":"100u"}}`, true},
		{`{"requests":{"cpu":"1001u"}}`, `{"requests":{"cpu":"1m"}}`, false},
		// A different amount, or a live spelling the API server would never store.
		{`{"spec":{"requests":{"cpu":"1001m"}}}`, stored, false},
		{`{"spec":{"requests":{"memory":"1025Mi"}}}`, stored, false},
		{`{"spec":{"tag":"1Gi"}}`, stored, false},
		{`{"spec":{"n":"1Ki"}}`, stored, false},
		{`{"spec":{"requests":{"cpu":"one"}}}`, stored, false},
	}
	for _, c := range cases {
		if got := isSubset(parse(c.desired), parse(c.live)); got != c.want {
			t.Errorf("isSubset(%s, %s) = %v, want %v", c.desired, c.live, got, c.want)
		}
	}
}

func TestIsConverged(t *testing.T) {
	body := withAppliedHash(map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": "c", "labels": map[string]any{"a": "b"}},
		"data":       map[string]any{"k": "v"},
	})
	hash, _ := annotation(body, appliedHashAnnotation)
	live := func(h string, data string) map[string]any {
		return map[string]any{
			"metadata": map[string]any{
				"name": "c", "uid": "u", "labels": map[string]any{"a": "b", "other": "x"},
				"annotations": map[string]any{appliedHashAnnotation: h},
			},
			"data": map[string]any{"k": data},
		}
	}
	if !isConverged(body, live(hash, "v")) {
		t.Error("the same object with the same hash is not converged")
	}
	if isConverged(body, live("0000000000000000", "v")) {
		t.Error("a different hash is converged")
	}
	if isConverged(body, live(hash, "drifted")) {
		t.Error("a drifted field is converged")
	}
}

func TestQuantityValue(t *testing.T) {
	for q, want := range map[string]float64{"1Gi": 1 << 30, "1.5Gi": 1.5 * (1 << 30), "500m": 1, "2e3": 2000, "1G": 1e9, "10": 10, "1E": 1e18} {
		if got, ok := quantityValue(q); !ok || got != want {
			t.Errorf("quantityValue(%s) = %v, %v; want %v", q, got, ok, want)
		}
	}
	if _, ok := quantityValue("1 Gi"); ok {
		t.Error("accepted 1 Gi")
	}
}

func TestEncodeURIComponent(t *testing.T) {
	if got, want := encodeURIComponent("a/b+c=d&e f?~*'()!é"), "a%2Fb%2Bc%3Dd%26e%20f%3F~*'()!%C3%A9"; got != want {
		t.Errorf("encodeURIComponent = %s, want %s", got, want)
	}
}
