// bundle-validate checks an OLM bundle directory the way `operator-sdk bundle
// validate` does, with the library that command runs
// (github.com/operator-framework/api's manifests loader and validators).
//
// Why not operator-sdk itself: the Go module proxy does not serve
// github.com/operator-framework/operator-sdk (every version answers 403), and
// the project builds its tools from the proxy only. The validation that
// `operator-sdk bundle validate` reports comes from operator-framework/api;
// the one part it takes from operator-registry (the bundle's format: the
// metadata/annotations.yaml keys and the manifests/ layout) is checked here in
// a few lines instead of pulling in operator-registry and its SQLite driver.
//
//	bundle-validate DIR                               format, then the default validators (CSV, CRDs, bundle, objects)
//	bundle-validate --suite operatorframework DIR     and OperatorHub's: categories, capabilities, good practices, deprecated APIs
//	bundle-validate --k8s-version 1.34 ...            the cluster version the deprecated-API check targets
//
// It prints every error and warning, one a line, and exits 1 on any error.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apimanifests "github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
	"sigs.k8s.io/yaml"
)

// The annotations a registry+v1 bundle image must carry (operator-registry's
// bundle format), and the values the first four must have.
var requiredAnnotations = map[string]string{
	"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
	"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
	"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
	"operators.operatorframework.io.bundle.package.v1":   "",
	"operators.operatorframework.io.bundle.channels.v1":  "",
}

// Kinds a registry+v1 bundle's manifests/ may hold besides the CSV and CRDs
// (operator-registry's list of supported kinds).
var supportedKinds = map[string]bool{
	"ClusterServiceVersion": true, "CustomResourceDefinition": true, "Secret": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "ConfigMap": true, "ServiceAccount": true, "Service": true, "Role": true,
	"RoleBinding": true, "PrometheusRule": true, "ServiceMonitor": true, "PodDisruptionBudget": true,
	"PriorityClass": true, "VerticalPodAutoscaler": true, "ConsoleYAMLSample": true, "ConsoleQuickStart": true,
	"ConsoleCLIDownload": true, "ConsoleLink": true, "NetworkPolicy": true,
}

func formatErrors(dir string) []string {
	var errs []string
	raw, err := os.ReadFile(filepath.Join(dir, "metadata", "annotations.yaml"))
	if err != nil {
		return []string{fmt.Sprintf("metadata/annotations.yaml: %v", err)}
	}
	var file struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		return []string{fmt.Sprintf("metadata/annotations.yaml: %v", err)}
	}
	for key, want := range requiredAnnotations {
		got, ok := file.Annotations[key]
		switch {
		case !ok || got == "":
			errs = append(errs, fmt.Sprintf("metadata/annotations.yaml: missing %s", key))
		case want != "" && got != want:
			errs = append(errs, fmt.Sprintf("metadata/annotations.yaml: %s is %q, expected %q", key, got, want))
		}
	}
	if def := file.Annotations["operators.operatorframework.io.bundle.channel.default.v1"]; def != "" {
		found := false
		for _, c := range strings.Split(file.Annotations["operators.operatorframework.io.bundle.channels.v1"], ",") {
			found = found || strings.TrimSpace(c) == def
		}
		if !found {
			errs = append(errs, fmt.Sprintf("metadata/annotations.yaml: default channel %q is not among the channels", def))
		}
	}
	entries, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return append(errs, fmt.Sprintf("manifests/: %v", err))
	}
	csvs := 0
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, "manifests", e.Name()))
		if err != nil {
			errs = append(errs, fmt.Sprintf("manifests/%s: %v", e.Name(), err))
			continue
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(raw, &meta); err != nil {
			errs = append(errs, fmt.Sprintf("manifests/%s: %v", e.Name(), err))
			continue
		}
		if !supportedKinds[meta.Kind] {
			errs = append(errs, fmt.Sprintf("manifests/%s: kind %q is not supported in a bundle", e.Name(), meta.Kind))
		}
		if meta.Kind == "ClusterServiceVersion" {
			csvs++
		}
	}
	if csvs != 1 {
		errs = append(errs, fmt.Sprintf("manifests/: %d ClusterServiceVersions, expected exactly one", csvs))
	}
	return errs
}

func main() {
	suite := flag.String("suite", "", "also run a suite of optional validators: operatorframework")
	k8sVersion := flag.String("k8s-version", "", "the Kubernetes version the deprecated-API check targets")
	flag.Parse()
	if flag.NArg() != 1 || (*suite != "" && *suite != "operatorframework") {
		fmt.Fprintln(os.Stderr, "usage: bundle-validate [--suite operatorframework] [--k8s-version X.Y] BUNDLE_DIR")
		os.Exit(2)
	}
	dir := flag.Arg(0)
	failed := false
	for _, e := range formatErrors(dir) {
		fmt.Printf("ERROR %s\n", e)
		failed = true
	}
	bundle, err := apimanifests.GetBundleFromDir(dir)
	if err != nil {
		fmt.Printf("ERROR loading the bundle: %v\n", err)
		os.Exit(1)
	}
	validators := validation.DefaultBundleValidators.WithValidators(validation.ObjectValidator)
	if *suite == "operatorframework" {
		validators = validators.WithValidators(interfaces.Validators{
			validation.OperatorHubV2Validator,
			validation.StandardCapabilitiesValidator,
			validation.StandardCategoriesValidator,
			validation.GoodPracticesValidator,
			validation.AlphaDeprecatedAPIsValidator,
		}...)
	}
	objs := bundle.ObjectsToValidate()
	if *k8sVersion != "" {
		objs = append(objs, map[string]string{"k8s-version": *k8sVersion})
	}
	warnings := 0
	for _, result := range validators.Validate(objs...) {
		for _, e := range result.Errors {
			fmt.Printf("ERROR %s\n", describe(result.Name, e))
			failed = true
		}
		for _, w := range result.Warnings {
			fmt.Printf("WARN %s\n", describe(result.Name, w))
			warnings++
		}
	}
	if failed {
		os.Exit(1)
	}
	fmt.Printf("bundle %s (%s) is valid: %d warnings\n", dir, bundle.CSV.GetName(), warnings)
}

func describe(name string, e errors.Error) string {
	if name == "" {
		return e.Error()
	}
	return fmt.Sprintf("%s: %s", name, e.Error())
}
