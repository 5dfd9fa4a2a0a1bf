// reference-go: the Database controller of apps/database-controller written
// the ordinary way, on controller-runtime, as the benchmark's performance
// anchor. One binary, four subcommands:
//
//	reference-go render   < case.json   the pure part of reconcile, as JSON (matches tools/bench/render.ts)
//	reference-go manager  [flags]       the controller
//	reference-go floor    [flags]       the same writes with no informers and no logic: the lower bound
//	reference-go framework [flags]      one controller, a trivial reconcile: the framework-bound benchmark
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: reference-go render|manager|floor|framework [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "render":
		err = renderCommand(os.Stdin, os.Stdout)
	case "framework":
		err = frameworkCommand(os.Args[2:])
	case "manager":
		err = managerCommand(os.Args[2:])
	case "floor":
		err = floorCommand(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q: want render, manager, floor or framework", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reference-go:", err)
		os.Exit(1)
	}
}

// renderCase is tools/bench/render.ts's input.
type renderCase struct {
	Database    map[string]any      `json:"database"`
	Password    string              `json:"password"`
	StatefulSet *appsv1.StatefulSet `json:"statefulSet,omitempty"`
	BackupJobs  []batchv1.Job       `json:"backupJobs,omitempty"`
	Now         string              `json:"now"`
	// The replication Secret's password (postgres); the credentials' password when absent.
	ReplicationPassword *string `json:"replicationPassword,omitempty"`
	// The recorded topology ConfigMap's data; absent: none recorded yet.
	Topology map[string]string `json:"topology,omitempty"`
	// The Pods the reconcile lists; absent: it stopped before observing them.
	Pods *[]corev1.Pod `json:"pods,omitempty"`
	// The StatefulSet as sent, for its claim size exactly as written
	// (a resource.Quantity would print it in canonical form).
	rawStatefulSet map[string]any
}

type renderedChild struct {
	Kind   string         `json:"kind"`
	Name   string         `json:"name"`
	Apply  map[string]any `json:"apply,omitempty"`
	Delete bool           `json:"delete,omitempty"`
}

type rendered struct {
	Children               []renderedChild      `json:"children"`
	Credentials            map[string]any       `json:"credentials,omitempty"`
	ReplicationCredentials map[string]any       `json:"replicationCredentials,omitempty"`
	Topology               map[string]any       `json:"topology,omitempty"`
	Replication            *renderedReplication `json:"replication,omitempty"`
	Status                 map[string]any       `json:"status"`
}

// renderedReplication: the replication step's API calls, in order, and the requeue it asks for.
type renderedReplication struct {
	Calls          []replicationAction `json:"calls"`
	RequeueAfterMs *int64              `json:"requeueAfterMs,omitempty"`
}

func renderCommand(in io.Reader, out io.Writer) error {
	data, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	data = bytes.TrimSpace(data)
	var result any
	if len(data) > 0 && data[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(data, &raws); err != nil {
			return err
		}
		all := make([]rendered, 0, len(raws))
		for _, raw := range raws {
			r, err := renderRaw(raw)
			if err != nil {
				return err
			}
			all = append(all, r)
		}
		result = all
	} else {
		r, err := renderRaw(data)
		if err != nil {
			return err
		}
		result = r
	}
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(result); err != nil {
		return err
	}
	return w.Flush()
}

func renderRaw(raw []byte) (rendered, error) {
	var c renderCase
	if err := json.Unmarshal(raw, &c); err != nil {
		return rendered{}, err
	}
	var rawSts struct {
		StatefulSet map[string]any `json:"statefulSet"`
	}
	if err := json.Unmarshal(raw, &rawSts); err != nil {
		return rendered{}, err
	}
	c.rawStatefulSet = rawSts.StatefulSet
	return render(c)
}

// render is tools/bench/render.ts's render: the apply bodies, the generated
// credentials and the status, for one Database and what was observed of it.
func render(c renderCase) (rendered, error) {
	db, err := parseDatabase(c.Database)
	if err != nil {
		return rendered{}, err
	}
	now, err := time.Parse(time.RFC3339Nano, c.Now)
	if err != nil {
		return rendered{}, fmt.Errorf("now: %w", err)
	}
	var out rendered
	recorded := topologyOf(c.Topology)
	t := db.firstTopology()
	if recorded != nil {
		t = *recorded
	}
	if db.topologyDue(recorded) {
		out.Topology = db.topologyConfigMap(t)
	}
	for _, child := range db.desiredChildren(claimSize(c.rawStatefulSet), db.instanceCount(t)) {
		if child.body == nil {
			out.Children = append(out.Children, renderedChild{Kind: child.kind.kind, Name: child.name, Delete: true})
		} else {
			out.Children = append(out.Children, renderedChild{Kind: child.kind.kind, Name: child.name, Apply: child.body})
		}
	}
	if !db.referencesSecret() {
		out.Credentials = db.credentialsSecret(c.Password)
	}
	if db.engine == "postgres" {
		password := c.Password
		if c.ReplicationPassword != nil {
			password = *c.ReplicationPassword
		}
		out.ReplicationCredentials = db.replicationSecret(password)
	}
	o := observed{
		statefulSet:       c.StatefulSet,
		backupJobs:        c.BackupJobs,
		credentialsSecret: db.names().credentials,
	}
	if c.Pods != nil {
		d := db.decideReplication(t, *c.Pods, newTroubleClock(), now.UnixMilli())
		list := replicationAction{Verb: "list", Kind: "Pod", Namespace: db.ns(), LabelSelector: db.selectorString()}
		out.Replication = &renderedReplication{Calls: append([]replicationAction{list}, d.actions...)}
		if d.requeueAfter > 0 {
			ms := d.requeueAfter.Milliseconds()
			out.Replication.RequeueAfterMs = &ms
		}
		o.replication = &d.view
	}
	out.Status = db.computeStatus(o, now)
	return out, nil
}

// claimSize: spec.volumeClaimTemplates[0].spec.resources.requests.storage of
// a StatefulSet as JSON, "" when absent.
func claimSize(sts map[string]any) string {
	spec, _ := sts["spec"].(map[string]any)
	templates, _ := spec["volumeClaimTemplates"].([]any)
	if len(templates) == 0 {
		return ""
	}
	first, _ := templates[0].(map[string]any)
	claimSpec, _ := first["spec"].(map[string]any)
	resources, _ := claimSpec["resources"].(map[string]any)
	requests, _ := resources["requests"].(map[string]any)
	if v := requests["storage"]; truthy(v) {
		return jsString(v)
	}
	return ""
}
