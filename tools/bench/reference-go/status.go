package main

// The Database status, computed from what reconcile observed
// (apps/database-controller/src/status.ts, with packages/runtime's
// setCondition and derivePhase). Built as a JSON map, like the children: the
// status write is skipped when it deep-equals the status the object already
// reports, and that comparison is between JSON values.

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// problem is something only reconcile can find: Degraded=True with this
// reason, and a Warning Event.
type problem struct {
	reason, message string
}

type observed struct {
	statefulSet       *appsv1.StatefulSet // nil when absent (or not controlled by this Database)
	backupJobs        []batchv1.Job
	problem           *problem
	credentialsSecret string
	// What this reconcile saw of the instances; nil when it stopped before looking.
	replication *replicationView
}

// metaTime is metav1.Time as JSON: RFC 3339 in UTC, whole seconds (cut, not rounded).
func metaTime(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05Z")
}

// rolledOut (conventions' rolledOut): the live StatefulSet runs the template
// the controller wants now on every replica, and they are ready. The template
// is compared, not only the revisions: one not yet applied, or changed behind
// the controller's back, is not rolled out however settled the status looks.
func (db *database) rolledOut(sts *appsv1.StatefulSet, credentials string) bool {
	if sts == nil || sts.Spec.Replicas == nil || float64(*sts.Spec.Replicas) != db.replicas {
		return false
	}
	desired := db.statefulSet(credentials, "", db.replicas)["spec"].(map[string]any)["template"]
	live, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&sts.Spec.Template)
	if err != nil || !isSubset(desired, live) {
		return false
	}
	s := sts.Status
	want := db.replicas
	return s.ObservedGeneration >= sts.Generation &&
		// OnDelete never moves the current revision: every Pod at the update revision is the end of the roll.
		(s.CurrentRevision == s.UpdateRevision || sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType) &&
		float64(s.UpdatedReplicas) == want &&
		float64(s.ReadyReplicas) == want &&
		float64(s.Replicas) == want
}

// conditionSetter applies setCondition updates to a copy of the previous conditions.
type conditionSetter struct {
	list       []any
	generation any
	now        string
}

const conditionMessageMaxBytes = 32768

// set: an existing condition of the type keeps its position, and its
// lastTransitionTime unless the status changes; a new type is appended.
func (c *conditionSetter) set(typ, status, reason, message string) {
	next := map[string]any{
		"type":               typ,
		"status":             status,
		"observedGeneration": c.generation,
		"reason":             reason,
		"message":            truncateUTF8(message, conditionMessageMaxBytes),
		"lastTransitionTime": c.now,
	}
	for i, e := range c.list {
		existing, _ := e.(map[string]any)
		if existing == nil || existing["type"] != typ {
			continue
		}
		if existing["status"] == status && truthy(existing["lastTransitionTime"]) {
			next["lastTransitionTime"] = existing["lastTransitionTime"]
		}
		c.list[i] = next
		return
	}
	c.list = append(c.list, next)
}

func (c *conditionSetter) find(typ string) map[string]any {
	for _, e := range c.list {
		if m, _ := e.(map[string]any); m != nil && m["type"] == typ {
			return m
		}
	}
	return nil
}

// truncateUTF8 cuts text to at most maxBytes of UTF-8 without splitting a character.
func truncateUTF8(text string, maxBytes int) string {
	if len(text) <= maxBytes {
		return text
	}
	const suffix = "..."
	budget := maxBytes - len(suffix)
	used := 0
	for i, r := range text {
		size := utf8.RuneLen(r)
		if size < 0 {
			size = 3 // an invalid byte: TextEncoder writes U+FFFD
		}
		if used+size > budget {
			return text[:i] + suffix
		}
		used += size
	}
	return text + suffix
}

// derivePhase: Degraded wins, then Ready; otherwise Updating if it has been
// ready before, Provisioning on the way there, Pending if nothing is known.
func derivePhase(c *conditionSetter, everReady bool) string {
	if d := c.find("Degraded"); d != nil && d["status"] == "True" {
		return "Degraded"
	}
	ready := c.find("Ready")
	if ready != nil && ready["status"] == "True" {
		return "Ready"
	}
	if ready == nil || ready["status"] == "Unknown" {
		return "Pending"
	}
	if everReady {
		return "Updating"
	}
	return "Provisioning"
}

// computeStatus: everything the status says, from what was observed.
func (db *database) computeStatus(o observed, now time.Time) map[string]any {
	prev := db.status
	sts := o.statefulSet
	var ready int32
	if sts != nil {
		ready = sts.Status.ReadyReplicas
	}
	// The desired template (its image included) runs on every replica, and they are ready.
	done := db.rolledOut(sts, o.credentialsSecret)
	// currentVersion moves only once every Pod runs the new version. Its JS
	// value can be undefined, so whether it is defined is tracked apart.
	currentVersion, versionDefined := prev["currentVersion"]
	if done {
		currentVersion, versionDefined = db.version, true
	}

	prevConditions, _ := prev["conditions"].([]any)
	c := &conditionSetter{list: slices.Clone(prevConditions), generation: db.generation, now: metaTime(now)}
	replicas := jsNumber(db.replicas)

	// Degraded and Stalled; a problem is also what Ready names, as in runtime's setProblemConditions.
	// Every problem this reference meets waits for a person, so it is Stalled.
	readyCount := strconv.Itoa(int(ready))
	r := o.replication
	primary, _ := prev["currentPrimary"].(string)
	if r != nil {
		primary = r.plan.currentPrimary
	}
	if o.problem != nil {
		c.set("Degraded", "True", o.problem.reason, o.problem.message)
		c.set("Stalled", "True", o.problem.reason, o.problem.message)
		c.set("Ready", "False", o.problem.reason, o.problem.message)
	} else {
		c.set("Degraded", "False", "AsExpected", "No problems found")
		c.set("Stalled", "False", "AsExpected", "Nothing waits for a person")
		switch {
		case sts == nil:
			c.set("Ready", "Unknown", "StatefulSetMissing", "The StatefulSet does not exist yet")
		case r != nil && primary == "":
			waiting := r.plan.waiting
			if waiting == "" {
				waiting = "waiting for the primary"
			}
			c.set("Ready", "False", "NoPrimary", "No instance accepts writes: "+waiting)
		case done:
			c.set("Ready", "True", "AllReplicasReady", readyCount+"/"+replicas+" replicas ready, running "+db.version)
		default:
			c.set("Ready", "False", "ReplicasNotReady", readyCount+"/"+replicas+" replicas ready")
		}
	}

	switch {
	case o.problem != nil:
		c.set("Progressing", "False", o.problem.reason, "Blocked: "+o.problem.message)
	case sts == nil:
		c.set("Progressing", "Unknown", "Creating", "Creating the StatefulSet")
	case done:
		c.set("Progressing", "False", "Stable", "Nothing to roll out")
	case truthy(currentVersion) && currentVersion != db.version:
		c.set("Progressing", "True", "Upgrading", "Rolling "+jsString(currentVersion)+" to "+db.version)
	case float64(sts.Status.Replicas) != db.replicas:
		c.set("Progressing", "True", "Scaling",
			"Scaling from "+strconv.Itoa(int(sts.Status.Replicas))+" to "+replicas+" replicas")
	default:
		c.set("Progressing", "True", "RollingOut",
			strconv.Itoa(int(sts.Status.UpdatedReplicas))+"/"+replicas+" replicas updated")
	}

	finished := finishedJobs(o.backupJobs)
	switch {
	case db.backup == nil:
		c.set("BackupSucceeded", "Unknown", "BackupsDisabled",
			"No spec.backup: nothing backs this Database up. Set spec.backup.objectStore (postgres, mariadb) to take backups")
	case !db.throwawayBackups():
		c.set("BackupSucceeded", "Unknown", "BackupsDisabled", "Backups are disabled")
	default:
		// A dump onto a scratch volume is no backup, whatever its Job did.
		message := noBackupDestinationReport
		if len(finished) > 0 {
			outcome := "failed"
			if finished[0].Status.Succeeded > 0 {
				outcome = "completed"
			}
			message += " (the latest dump, Job " + finished[0].Name + ", " + outcome + ")"
		}
		c.set("BackupSucceeded", "False", "NoBackupDestination", message)
	}

	if r != nil {
		status, reason, message := db.replicationHealth(r)
		c.set("ReplicationHealthy", status, reason, message)
	} else if c.find("ReplicationHealthy") == nil {
		c.set("ReplicationHealthy", "Unknown", "NotObserved", "The instances have not been observed yet")
	}

	var stsReplicas int64
	if sts != nil {
		stsReplicas = int64(sts.Status.Replicas)
	}
	status := map[string]any{
		"observedGeneration": db.generation,
		"conditions":         c.list,
		"phase":              derivePhase(c, versionDefined),
		"replicas":           stsReplicas,
		"readyReplicas":      int64(ready),
		"selector":           db.selectorString(),
		"binding":            map[string]any{"name": o.credentialsSecret},
		"endpoint":           db.names().clientService + "." + db.ns() + ".svc:" + jsNumber(float64(db.defaults.port)),
	}
	if truthy(currentVersion) {
		status["currentVersion"] = currentVersion
	}
	if primary != "" {
		status["currentPrimary"] = primary
	}
	// status.switchover, as status.ts's switchoverStatus: what became of the last request, kept once
	// refused or started; a wait given up leaves nothing. (The reference never waits for a catch-up.)
	prevSwitchover, _ := prev["switchover"].(map[string]any)
	if r != nil && r.plan.switchover != nil {
		s := r.plan.switchover
		since := metaTime(now)
		if prevSwitchover != nil && prevSwitchover["target"] == s.target && prevSwitchover["state"] == s.state {
			since, _ = prevSwitchover["since"].(string)
		}
		status["switchover"] = map[string]any{"target": s.target, "state": s.state, "message": s.message, "since": since}
	} else if prevSwitchover != nil && prevSwitchover["state"] != "Waiting" {
		status["switchover"] = prevSwitchover
	}
	// The system identifier comes from a server's answer over SQL, which the reference never asks.
	if truthy(prev["systemIdentifier"]) {
		status["systemIdentifier"] = prev["systemIdentifier"]
	}
	if r != nil {
		status["instances"] = db.instancesOf(r)
	} else if instances, ok := prev["instances"]; ok && instances != nil {
		status["instances"] = instances
	}
	// Only a restorable backup sets it, and the reference takes none: carried as it was.
	if truthy(prev["lastBackup"]) {
		status["lastBackup"] = prev["lastBackup"]
	}
	return status
}

// finishedJobs: the Jobs that completed or failed, latest first (a stable
// sort, as Array.prototype.sort is).
func finishedJobs(jobs []batchv1.Job) []*batchv1.Job {
	var finished []*batchv1.Job
	for i := range jobs {
		j := &jobs[i]
		if j.Status.CompletionTime != nil || jobCondition(j, batchv1.JobFailed, true) != nil {
			finished = append(finished, j)
		}
	}
	slices.SortStableFunc(finished, func(a, b *batchv1.Job) int {
		ta, tb := finishTime(a), finishTime(b)
		switch {
		case tb > ta:
			return 1
		case tb < ta:
			return -1
		}
		return 0
	})
	return finished
}

func jobCondition(j *batchv1.Job, typ batchv1.JobConditionType, mustBeTrue bool) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		c := &j.Status.Conditions[i]
		if c.Type == typ && (!mustBeTrue || c.Status == corev1.ConditionTrue) {
			return c
		}
	}
	return nil
}

// finishTime in milliseconds: completion, else the Failed condition's transition, else 0.
func finishTime(j *batchv1.Job) int64 {
	var t metav1.Time
	if j.Status.CompletionTime != nil {
		t = *j.Status.CompletionTime
	} else if c := jobCondition(j, batchv1.JobFailed, false); c != nil {
		t = c.LastTransitionTime
	}
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// quantityGrammar is resource.Quantity's syntax (quantity.ts).
var quantityGrammar = regexp.MustCompile(`^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([KMGTPE]i)|([numkMGTPE]?)|[eE]([+-]?[0-9]+))$`)

var binarySuffix = map[string]float64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
var decimalSuffix = map[string]float64{"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}

// quantityValue: a quantity in base units, rounded up, compared the way the
// TypeScript controller compares sizes (as doubles).
func quantityValue(q string) (float64, bool) {
	m := quantityGrammar.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	var factor float64
	switch {
	case m[2] != "":
		factor = binarySuffix[m[2]]
	case m[4] != "":
		e, _ := strconv.Atoi(m[4])
		factor = math.Pow(10, float64(e))
	default:
		factor = decimalSuffix[m[3]]
	}
	return math.Ceil(n * factor), true
}

// instancesOf: each instance's role and state, as the reconcile saw it.
func (db *database) instancesOf(r *replicationView) []any {
	out := make([]any, 0, len(r.members))
	for _, m := range r.members {
		role := r.plan.roles[m.pod]
		if role == "" {
			role = "standby"
		}
		state := "Unreachable" // more than one instance: no server answers the reference over SQL
		switch {
		case m.uid == "":
			state = "Missing"
		case !r.replicated && m.ready:
			state = "Primary"
		case !r.replicated:
			state = "Starting"
		}
		out = append(out, map[string]any{"name": m.pod, "role": role, "state": state})
	}
	return out
}

func (db *database) replicationHealth(r *replicationView) (status, reason, message string) {
	if !r.replicated {
		return "True", "SingleInstance", "One instance: nothing to replicate"
	}
	primary := r.plan.currentPrimary
	if primary == "" {
		if r.plan.waiting != "" {
			return "False", "NoPrimary", r.plan.waiting
		}
		return "False", "NoPrimary", "No instance accepts writes"
	}
	var behind []string
	for _, m := range r.members {
		if m.pod != primary && m.ordinal < db.replicas && r.plan.roles[m.pod] != "replica" {
			behind = append(behind, m.pod)
		}
	}
	if len(behind) > 0 {
		message := strings.Join(behind, ", ") + " not streaming from " + primary + " within the lag bound"
		if r.plan.waiting != "" {
			message += "; " + r.plan.waiting
		}
		return "False", "ReplicasNotStreaming", message
	}
	return "True", "Streaming", jsNumber(db.replicas-1) + " replica(s) streaming from " + primary
}

// noBackupDestinationReport: what BackupSucceeded and the Warning Event say of backups that go nowhere (children.ts).
const noBackupDestinationReport = "spec.backup enables backups but names no objectStore: each scheduled dump reaches only a scratch volume deleted with its Pod, and can never be restored. Set spec.backup.objectStore (postgres, mariadb), or spec.backup.enabled: false (mysql). The API server refuses this form for new Databases; this one was stored before that"
