package main

// Who is the primary, and what to do about it
// (apps/database-controller/src/replication/{plan,replication}.ts), for what
// the reference can observe without SQL: the Pods. A single instance is not
// polled over SQL in the TypeScript controller either (its readiness, a query
// with the credentials, stands for a writable server), so for replicas: 1,
// what the benchmark runs, this is the same work. For more instances the
// TypeScript controller probes each server over SQL; the reference does not
// (no postgres driver), so it sees them as the TypeScript controller sees
// unreachable servers: no primary, nothing promoted. (The TypeScript
// controller also keeps the role label of a Ready Pod it cannot reach and
// reports InstancesReachable; replicated Databases are not in the benchmark,
// and the reference does not model that.)

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

const (
	switchoverAnnotation   = "regulon.dev/switchover-to"
	defaultFailoverDelayS  = 10
	defaultMaxLagBytes     = 16 * 1024 * 1024
	isoMillis              = "2006-01-02T15:04:05.000Z"
	singleInstanceRequeue  = time.Second
	replicatedStepRequeue  = 500 * time.Millisecond
	replicatedWaitRequeue  = 2 * time.Second
	replicatedQuietRequeue = 10 * time.Second
)

// topology is what the topology ConfigMap records. since is in ms, hasSince
// false where the TypeScript value is undefined.
type topology struct {
	primary     string
	initialized bool
	since       int64
	hasSince    bool
	// spec.replication.divergedData as the ConfigMap carries it for the Pods ("" when it does not).
	divergedData string
	// spec.replicas as the ConfigMap carries it for the agents' quorum answer ("" when it does not).
	members string
}

// topologyOf (children.ts): the topology a ConfigMap's data records; nil when it names no primary.
func topologyOf(data map[string]string) *topology {
	if data["primary"] == "" {
		return nil
	}
	t := &topology{primary: data["primary"], initialized: data["initialized"] == "true", divergedData: data["divergedData"], members: data["members"]}
	if s := data["since"]; s != "" {
		// Date.parse takes more forms; the controller only ever writes toISOString().
		if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
			t.since, t.hasSince = at.UnixMilli(), true
		}
	}
	return t
}

func (db *database) podName(i int) string { return db.name + "-" + strconv.Itoa(i) }

// ordinalOf: Number(the name after "<db>-"), NaN when it is not a number.
func (db *database) ordinalOf(pod string) float64 {
	rest := ""
	if len(pod) > len(db.name) {
		rest = pod[len(db.name)+1:]
	}
	return jsNumberOf(rest)
}

// jsNumberOf is Number(s) for the decimal spellings a Pod ordinal has ("" is 0, as in JavaScript).
func jsNumberOf(s string) float64 {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || strings.ContainsAny(t, "_xXoObBpP") || strings.EqualFold(t, "inf") || strings.EqualFold(t, "infinity") || strings.EqualFold(t, "nan") {
		return math.NaN()
	}
	return f
}

func (db *database) firstTopology() topology { return topology{primary: db.podName(0)} }

// instanceCount: spec.replicas, or more while the primary sits on an ordinal being removed.
func (db *database) instanceCount(t topology) float64 {
	return math.Max(db.replicas, db.ordinalOf(t.primary)+1)
}

// topologyConfigMap: the apply body of the topology ConfigMap.
func (db *database) topologyConfigMap(t topology) map[string]any {
	data := map[string]any{"primary": t.primary, "initialized": strconv.FormatBool(t.initialized), "divergedData": db.divergedData(), "members": db.members()}
	if t.hasSince {
		data["since"] = time.UnixMilli(t.since).UTC().Format(isoMillis)
	}
	return db.applyBody(kindConfigMap, map[string]any{"metadata": meta(db.names().topology, db.labels()), "data": data})
}

// server is what an instance's server says over SQL; the reference only
// builds the one a single ready instance stands for.
type server struct {
	writable       bool
	systemID       string
	timeline       int64
	lsn, replayLsn uint64
	streaming      bool
}

type member struct {
	pod          string
	ordinal      float64
	uid          string // "" when no Pod exists
	createdAt    int64
	hasCreatedAt bool
	deleting     bool
	ready        bool
	server       *server
	troubleSince int64
	inTrouble    bool
}

type step struct {
	kind     string // topology, fence, promote, refuseSwitchover
	topology topology
	reason   string // of a topology step: Initialized, Failover, Switchover
	message  string
	pod, uid string
	graceful bool
}

type replicationPlan struct {
	step           *step
	roles          map[string]string // "" for no role label
	currentPrimary string
	waiting        string
	recheckInMs    int64
	hasRecheck     bool
	// A requested switchover: what became of it (status.switchover), as plan.ts's Plan.switchover.
	switchover *switchoverOutcome
}

type switchoverOutcome struct {
	target, state, message string
}

type planInput struct {
	replicas        float64
	members         []member
	topology        topology
	systemID        string
	failoverDelayMs int64
	maxLagBytes     uint64
	now             int64
	switchoverTo    string
}

// replicationView: what the reconcile saw of the instances, for the status.
type replicationView struct {
	replicated bool
	topology   topology
	members    []member
	plan       replicationPlan
}

func better(a, b *member) bool {
	switch {
	case a.server.lsn != b.server.lsn:
		return a.server.lsn > b.server.lsn
	case a.server.replayLsn != b.server.replayLsn:
		return a.server.replayLsn > b.server.replayLsn
	}
	return a.ordinal < b.ordinal
}

func bestStandby(in *planInput, except string) *member {
	var best *member
	for i := range in.members {
		m := &in.members[i]
		s := m.server
		if m.pod == except || s == nil || s.writable || !(m.ordinal < in.replicas) || m.deleting {
			continue
		}
		if in.systemID != "" && s.systemID != in.systemID {
			continue
		}
		if best == nil || better(m, best) {
			best = m
		}
	}
	return best
}

// plan (plan.ts): a pure function of what was observed.
func plan(in planInput) replicationPlan {
	t := in.topology
	var named *member
	for i := range in.members {
		if in.members[i].pod == t.primary {
			named = &in.members[i]
			break
		}
	}
	result := replicationPlan{roles: map[string]string{}}
	var primaryServer *member
	if named != nil && named.server != nil && named.server.writable {
		primaryServer = named
	}
	for i := range in.members {
		result.roles[in.members[i].pod] = roleOf(&in.members[i], primaryServer, &in)
	}

	for i := range in.members {
		stray := &in.members[i]
		if stray.server == nil || !stray.server.writable || stray.pod == t.primary {
			continue
		}
		result.roles[stray.pod] = ""
		if stray.uid != "" && !stray.deleting {
			result.step = &step{
				kind: "fence", pod: stray.pod, uid: stray.uid, graceful: stray.ready,
				message: stray.pod + " is writable but " + t.primary + " is the primary: stopping it so it rejoins as a standby",
			}
		} else {
			result.waiting = "waiting for " + stray.pod + " to stop before " + t.primary + " is promoted"
		}
		if primaryServer != nil {
			result.currentPrimary = primaryServer.pod
		}
		return result
	}

	if primaryServer != nil {
		result.currentPrimary = primaryServer.pod
		if !t.initialized {
			next := t
			next.initialized = true
			result.step = &step{
				kind: "topology", topology: next, reason: "Initialized",
				message: primaryServer.pod + " initialised the data set and is the primary",
			}
			return result
		}
		if target, refuse, why := switchoverTarget(&in, primaryServer); refuse != "" {
			result.step = &step{kind: "refuseSwitchover", message: refuse}
			result.switchover = &switchoverOutcome{target: in.switchoverTo, state: "Refused", message: refuse}
		} else if target != nil {
			next := t
			next.primary = target.pod
			result.step = &step{kind: "topology", topology: next, reason: "Switchover", message: why}
			if in.switchoverTo == target.pod {
				result.switchover = &switchoverOutcome{target: target.pod, state: "Started", message: why}
			}
		}
		return result
	}

	if !t.initialized {
		result.waiting = "waiting for " + t.primary + " to initialise the data set"
		return result
	}
	if named != nil && named.server != nil && !named.deleting {
		if in.systemID != "" && named.server.systemID != in.systemID {
			result.waiting = named.pod + " holds another database (system " + named.server.systemID + "); not promoted"
			return result
		}
		var unsafe *member
		for i := range in.members {
			m := &in.members[i]
			if m.pod != named.pod && m.uid != "" && !(m.server != nil && !m.server.writable) && startedBefore(m, t) {
				unsafe = m
				break
			}
		}
		if unsafe != nil && unsafe.deleting {
			result.waiting = "waiting for " + unsafe.pod + " to stop before " + named.pod + " is promoted"
			return result
		}
		if unsafe != nil {
			result.step = &step{
				kind: "fence", pod: unsafe.pod, uid: unsafe.uid,
				message: unsafe.pod + " does not answer and started before " + named.pod + " became the primary: stopping it before the promotion",
			}
			return result
		}
		result.step = &step{kind: "promote", pod: named.pod}
		return result
	}
	best := bestStandby(&in, t.primary)
	if best == nil {
		result.waiting = "primary " + t.primary + " is not serving, and no standby can take over"
		return result
	}
	since := in.now
	if named != nil && named.inTrouble {
		since = named.troubleSince
	}
	left := since + in.failoverDelayMs - in.now
	if left > 0 {
		result.waiting = "primary " + t.primary + " lost; " + best.pod + " takes over at " +
			time.UnixMilli(since+in.failoverDelayMs).UTC().Format("2006-01-02T15:04:05.000Z") + " unless it returns"
		result.recheckInMs, result.hasRecheck = left, true
		return result
	}
	next := t
	next.primary = best.pod
	result.step = &step{
		kind: "topology", topology: next, reason: "Failover",
		message: "primary " + t.primary + " lost for " + jsNumber(math.Floor(float64(in.now-since)/1000+0.5)) +
			" s: " + best.pod + ", the most advanced standby, takes over",
	}
	return result
}

func startedBefore(m *member, t topology) bool {
	if !t.hasSince || !m.hasCreatedAt {
		return true
	}
	return m.createdAt < t.since+1000
}

func roleOf(m *member, primary *member, in *planInput) string {
	if !m.ready || m.deleting || m.server == nil {
		return ""
	}
	if m == primary {
		return "primary"
	}
	s := m.server
	if s.writable || !s.streaming || primary == nil || primary.server == nil || !(m.ordinal < in.replicas) {
		return ""
	}
	if in.systemID != "" && s.systemID != in.systemID {
		return ""
	}
	if int64(primary.server.lsn)-int64(s.replayLsn) <= int64(in.maxLagBytes) {
		return "replica"
	}
	return ""
}

// switchoverTarget: a requested switchover (or its refusal), or a move off an ordinal being removed.
func switchoverTarget(in *planInput, primary *member) (target *member, refuse, why string) {
	requested := in.switchoverTo
	if requested != "" && requested != primary.pod {
		var m *member
		for i := range in.members {
			if in.members[i].pod == requested {
				m = &in.members[i]
				break
			}
		}
		if m == nil || !(m.ordinal < in.replicas) {
			return nil, "switchover to " + requested + ": no such instance among the " + jsNumber(in.replicas) + " replicas", ""
		}
		if m.server == nil || !m.server.streaming || !m.ready {
			return nil, "switchover to " + requested + ": it is not a ready, streaming standby", ""
		}
		return m, "", "switchover requested: " + primary.pod + " hands the primary role to " + m.pod
	}
	if !(primary.ordinal < in.replicas) {
		best := bestStandby(in, primary.pod)
		if best != nil && best.server.streaming && best.ready {
			return best, "", "scaling to " + jsNumber(in.replicas) + ": the primary moves off " + primary.pod +
				", which is removed, to " + best.pod
		}
	}
	return nil, "", ""
}

// troubleClock (TroubleClock): when each instance's trouble began, as this manager first saw it.
type troubleClock struct {
	mu    sync.Mutex
	since map[string]int64
}

func newTroubleClock() *troubleClock { return &troubleClock{since: map[string]int64{}} }

func (c *troubleClock) mark(key string, now int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.since[key]; ok {
		return t
	}
	c.since[key] = now
	return now
}

func (c *troubleClock) clear(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.since, key)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// replicationAction is one API call the replication step makes, in order:
// what the live reconcile sends, and what render prints.
type replicationAction struct {
	Verb               string         `json:"verb"`
	Kind               string         `json:"kind,omitempty"`
	Name               string         `json:"name,omitempty"`
	Namespace          string         `json:"namespace,omitempty"`
	LabelSelector      string         `json:"labelSelector,omitempty"`
	PatchType          string         `json:"type,omitempty"`
	Body               map[string]any `json:"body,omitempty"`
	Apply              map[string]any `json:"apply,omitempty"`
	Preconditions      map[string]any `json:"preconditions,omitempty"`
	GracePeriodSeconds *int64         `json:"gracePeriodSeconds,omitempty"`
	EventType          string         `json:"eventType,omitempty"`
	Reason             string         `json:"reason,omitempty"`
	Message            string         `json:"message,omitempty"`
}

// replicationDecision: what reconcileReplication observed and decided, and
// the calls that carry it out (the Pod list excluded: the caller made it).
type replicationDecision struct {
	view         replicationView
	actions      []replicationAction
	requeueAfter time.Duration
}

// decideReplication (reconcileReplication without its I/O): members from the
// listed Pods, plan(), then the role labels, the step, and the switchover
// request's removal.
// isInstancePod: `<name>-<ordinal>`, the StatefulSet's Pods, not the backup Jobs' Pods that carry the same labels.
func isInstancePod(db, pod string) bool {
	rest, ok := strings.CutPrefix(pod, db+"-")
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (db *database) decideReplication(t topology, listed []corev1.Pod, clock *troubleClock, now int64) replicationDecision {
	ns := db.ns()
	instances := db.instanceCount(t)
	var pods []*corev1.Pod
	byName := map[string]*corev1.Pod{}
	for i := range listed {
		p := &listed[i]
		if isInstancePod(db.name, p.Name) {
			pods = append(pods, p)
			byName[p.Name] = p
		}
	}
	replicated := db.replicas > 1 || len(pods) > 1 || t.primary != db.podName(0)

	var names []string
	seen := map[string]bool{}
	for i := 0; float64(i) < instances; i++ {
		names = append(names, db.podName(i))
		seen[db.podName(i)] = true
	}
	for _, p := range pods {
		if !seen[p.Name] {
			names = append(names, p.Name)
			seen[p.Name] = true
		}
	}
	members := make([]member, 0, len(names))
	for _, name := range names {
		pod := byName[name]
		m := member{pod: name, ordinal: db.ordinalOf(name)}
		if pod != nil {
			m.uid = string(pod.UID)
			if !pod.CreationTimestamp.IsZero() {
				m.createdAt, m.hasCreatedAt = pod.CreationTimestamp.UnixMilli(), true
			}
			m.deleting = pod.DeletionTimestamp != nil
			m.ready = podReady(pod)
		}
		// One instance is not polled over SQL: its readiness is the evidence.
		if !replicated && m.ready {
			m.server = &server{writable: true}
		}
		key := jsTemplate(db.uid) + "/" + name
		if m.ready && m.server != nil {
			clock.clear(key)
		} else {
			troubleSince := clock.mark(key, now)
			if pod != nil {
				notReadySince, known := int64(0), false
				for _, c := range pod.Status.Conditions {
					if c.Type == corev1.PodReady {
						if !c.LastTransitionTime.IsZero() {
							notReadySince, known = c.LastTransitionTime.UnixMilli(), true
						}
						break
					}
				}
				if !known && m.hasCreatedAt {
					notReadySince, known = m.createdAt, true
				}
				if known && notReadySince < troubleSince {
					troubleSince = notReadySince
				}
			}
			m.troubleSince, m.inTrouble = troubleSince, true
		}
		members = append(members, m)
	}

	switchoverTo, _ := db.annotations[switchoverAnnotation].(string)
	systemID, _ := db.status["systemIdentifier"].(string)
	failoverDelayS, maxLag := float64(defaultFailoverDelayS), float64(defaultMaxLagBytes)
	if v, ok := toFloat(db.replicationSetting("failoverDelaySeconds")); ok {
		failoverDelayS = v
	}
	if bounds, ok := db.replicationSetting("maxLag").(map[string]any); ok {
		if v, ok := toFloat(bounds["bytes"]); ok {
			maxLag = v
		}
	}
	decided := plan(planInput{
		replicas: db.replicas, members: members, topology: t, systemID: systemID,
		failoverDelayMs: int64(failoverDelayS * 1000), maxLagBytes: uint64(maxLag), now: now, switchoverTo: switchoverTo,
	})

	var actions []replicationAction
	// The role labels the Services select on; a single instance serves reads too.
	for _, p := range pods {
		want := decided.roles[p.Name]
		current, has := p.Labels[roleLabel]
		if (want == "" && !has) || (want != "" && has && current == want) || p.DeletionTimestamp != nil {
			continue
		}
		var value any
		if want != "" {
			value = want
		}
		actions = append(actions, replicationAction{
			Verb: "patch", Kind: "Pod", Name: p.Name, Namespace: ns, PatchType: "merge",
			Body: map[string]any{"metadata": map[string]any{"labels": map[string]any{roleLabel: value}}},
		})
	}
	if s := decided.step; s != nil {
		switch s.kind {
		case "topology":
			next := s.topology
			if s.topology.primary != t.primary {
				// When the record is written, as the TypeScript controller's carryOutStep.
				next.since, next.hasSince = time.Now().UnixMilli(), true
			} else {
				next.since, next.hasSince = t.since, t.hasSince
			}
			actions = append(actions, replicationAction{
				Verb: "apply", Kind: "ConfigMap", Name: db.names().topology, Apply: db.topologyConfigMap(next),
			})
			eventType, reason := "Normal", "Initialized"
			switch s.reason {
			case "Failover":
				eventType, reason = "Warning", "FailoverStarted"
			case "Switchover":
				reason = "SwitchoverStarted"
			}
			actions = append(actions, replicationAction{Verb: "event", EventType: eventType, Reason: reason, Message: s.message})
		case "fence":
			actions = append(actions, replicationAction{Verb: "event", EventType: "Warning", Reason: "Fencing", Message: s.message})
			del := replicationAction{
				Verb: "delete", Kind: "Pod", Name: s.pod, Namespace: ns, Preconditions: map[string]any{"uid": s.uid},
			}
			if !s.graceful {
				one := int64(1)
				del.GracePeriodSeconds = &one
			}
			actions = append(actions, del)
		case "refuseSwitchover":
			actions = append(actions, replicationAction{Verb: "event", EventType: "Warning", Reason: "SwitchoverRefused", Message: s.message})
		case "promote":
			// Needs SQL on the instance; unreachable here, as no server answers as a standby.
		}
	}
	if switchoverTo != "" && (switchoverTo == decided.currentPrimary || (decided.step != nil && decided.step.kind == "refuseSwitchover")) {
		actions = append(actions, replicationAction{
			Verb: "patch", Kind: kindDB, Name: db.name, Namespace: ns, PatchType: "merge",
			Body: map[string]any{"metadata": map[string]any{"annotations": map[string]any{switchoverAnnotation: nil}}},
		})
	}

	d := replicationDecision{
		view:    replicationView{replicated: replicated, topology: t, members: members, plan: decided},
		actions: actions,
	}
	switch {
	case !replicated:
		if decided.step != nil {
			d.requeueAfter = singleInstanceRequeue
		}
	case decided.step != nil:
		d.requeueAfter = replicatedStepRequeue
	case decided.hasRecheck:
		d.requeueAfter = min(time.Duration(decided.recheckInMs+100)*time.Millisecond, 5*time.Second)
	case decided.waiting != "":
		d.requeueAfter = replicatedWaitRequeue
	default:
		d.requeueAfter = replicatedQuietRequeue
	}
	return d
}

// replicationSetting: spec.replication[key], nil when absent.
// divergedData (children.ts divergedDataOf): spec.replication.divergedData, or the engine's default.
func (db *database) divergedData() string {
	if v, ok := db.replicationSetting("divergedData").(string); ok && v != "" {
		return v
	}
	if db.engine == "mariadb" {
		return "Keep"
	}
	return "Discard"
}

// topologyDue (reconciler.ts): the topology ConfigMap is applied when none is recorded, or to carry a new divergedData or instance count.
func (db *database) topologyDue(recorded *topology) bool {
	return recorded == nil || recorded.divergedData != db.divergedData() || recorded.members != db.members()
}

// members (children.ts topologyConfigMap): spec.replicas as the ConfigMap's string.
func (db *database) members() string { return strconv.FormatFloat(db.replicas, 'f', -1, 64) }

func (db *database) replicationSetting(key string) any {
	r, _ := db.spec["replication"].(map[string]any)
	return r[key]
}
