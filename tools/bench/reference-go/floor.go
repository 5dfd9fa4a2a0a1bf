package main

// The physical lower bound of the benchmark: with no informers and no logic,
// a tight concurrent client performs the same writes per Database as the
// controller does. The harness creates the Databases, as it does for the
// managers; one raw watch on Databases hands each new one to a worker that
// writes its credentials (and the replication Secret, postgres), applies the
// first topology, every child and the first status; one raw watch on Pods
// labels each primary and records the topology as initialised (with its
// Event), one raw watch on StatefulSets writes the Ready status once its
// StatefulSet has rolled out. Nothing is cached, nothing
// is re-read, nothing is queued or retried.
//
// The creates and the writes that follow them (a Pod's label, the Ready
// status) take their slots from two pools of the same size. With one shared
// pool, thousands of creates waiting on the API server's ClusterIP allocator
// held every slot, and the Ready statuses of Databases long since rolled out
// waited behind them: the floor was then slower than the managers it bounds.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
)

var (
	databasesGVR = schema.GroupVersionResource{Group: group, Version: version, Resource: "databases"}
	secretsGVR   = corev1.SchemeGroupVersion.WithResource("secrets")
	podsGVR      = corev1.SchemeGroupVersion.WithResource("pods")
	childGVRs    = map[childKind]schema.GroupVersionResource{
		kindServiceAccount: corev1.SchemeGroupVersion.WithResource("serviceaccounts"),
		kindConfigMap:      corev1.SchemeGroupVersion.WithResource("configmaps"),
		kindService:        corev1.SchemeGroupVersion.WithResource("services"),
		kindStatefulSet:    appsv1.SchemeGroupVersion.WithResource("statefulsets"),
		kindPDB:            {Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
		kindCronJob:        {Group: "batch", Version: "v1", Resource: "cronjobs"},
	}
)

// floorItem is one Database of the run.
type floorItem struct {
	name string

	mu        sync.Mutex
	started   bool                // its writes have begun
	db        *database           // as created, with the first status once it is written
	firstDone bool                // the first status is written
	finalDone bool                // the Ready status is written (or being written)
	sts       *appsv1.StatefulSet // the latest the watch has seen
}

type floor struct {
	ns        string
	dyn       dynamic.Interface
	meta      metadata.Interface
	kube      kubernetes.Interface
	items     map[string]*floorItem
	writes    atomic.Int64
	ready     atomic.Int64
	allReady  chan struct{}
	readyOnce sync.Once
	errs      chan error
	creates   chan struct{} // bounds the Databases being created at once
	followUps chan struct{} // bounds the Pod labels and Ready statuses being written at once
	labelled  sync.Map      // Pods labelled (or being labelled) with their role
}

func floorCommand(args []string) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "path to a kubeconfig")
	namespace := fs.String("namespace", "", "the namespace of the Databases (default: all namespaces)")
	count := fs.Int("count", 1, "how many Databases")
	prefix := fs.String("prefix", "db", "the Databases to expect are <prefix>-<5-digit index>")
	concurrency := fs.Int("concurrency", 64, "concurrent creates, and as many concurrent follow-up writes")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := restConfig(*kubeconfig, 0, 0) // unlimited: the floor is the API server's pace, not the client's
	if err != nil {
		return err
	}
	f := &floor{
		ns:        *namespace,
		items:     map[string]*floorItem{},
		allReady:  make(chan struct{}),
		errs:      make(chan error, 1),
		creates:   make(chan struct{}, max(*concurrency, 1)),
		followUps: make(chan struct{}, max(*concurrency, 1)),
	}
	if f.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	if f.meta, err = metadata.NewForConfig(cfg); err != nil {
		return err
	}
	if f.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	names := make([]string, *count)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%05d", *prefix, i)
		f.items[names[i]] = &floorItem{name: names[i]}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	if *count == 0 {
		close(f.allReady)
	}
	var opened sync.WaitGroup
	opened.Add(3)
	go f.watchLoop(ctx, "pods", f.watchPods, f.onPod, opened.Done)
	go f.watchLoop(ctx, "statefulsets", f.watchStatefulSets, f.onStatefulSet, opened.Done)
	go f.watchLoop(ctx, "databases", f.watchDatabases, f.onDatabase, opened.Done)
	opened.Wait()
	// The harness starts creating once it reads this line.
	fmt.Println("watching")

	select {
	case <-f.allReady:
	case err := <-f.errs:
		cancel()
		return err
	case <-ctx.Done():
		return fmt.Errorf("timed out: %d of %d Databases Ready", f.ready.Load(), *count)
	}
	elapsed := time.Since(start)
	out, _ := json.Marshal(struct {
		Created   int   `json:"created"`
		Writes    int64 `json:"writes"`
		ElapsedMs int64 `json:"elapsedMs"`
	}{*count, f.writes.Load(), elapsed.Milliseconds()})
	fmt.Println(string(out))
	// Stay until told to stop, so the harness reads this process's CPU time
	// and peak memory from /proc the same way it does for the managers.
	stop, unstop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer unstop()
	<-stop.Done()
	return nil
}

func (f *floor) fail(err error) {
	select {
	case f.errs <- err:
	default:
	}
}

var applyOptions = metav1.ApplyOptions{FieldManager: fieldOwner, Force: true}

// onDatabase starts the writes for a Database seen for the first time.
func (f *floor) onDatabase(ctx context.Context, obj metav1.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	item := f.items[obj.GetName()]
	if !ok || item == nil {
		return
	}
	item.mu.Lock()
	seen := item.started
	item.started = true
	item.mu.Unlock()
	if seen {
		return
	}
	f.spawn(f.creates, func() error { return f.create(ctx, item.name, u.Object) })
}

// create: the Database's credentials, every child, the first status.
func (f *floor) create(ctx context.Context, name string, created map[string]any) error {
	db, err := parseDatabase(created)
	if err != nil {
		return err
	}
	if !db.referencesSecret() {
		secret := &unstructured.Unstructured{Object: db.credentialsSecret(generatePassword())}
		_, err := f.dyn.Resource(secretsGVR).Namespace(db.ns()).Create(ctx, secret, metav1.CreateOptions{FieldManager: fieldOwner})
		f.writes.Add(1)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	if db.engine == "postgres" {
		secret := &unstructured.Unstructured{Object: db.replicationSecret(generatePassword())}
		_, err := f.dyn.Resource(secretsGVR).Namespace(db.ns()).Create(ctx, secret, metav1.CreateOptions{FieldManager: fieldOwner})
		f.writes.Add(1)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	t := db.firstTopology()
	if err := f.applyTopology(ctx, db, t); err != nil {
		return err
	}
	for _, child := range db.desiredChildren("", db.instanceCount(t)) {
		if child.body == nil {
			continue
		}
		_, err := f.dyn.Resource(childGVRs[child.kind]).Namespace(db.ns()).Apply(ctx, child.name, &unstructured.Unstructured{Object: child.body}, applyOptions)
		f.writes.Add(1)
		if err != nil {
			return fmt.Errorf("apply %s %s: %w", child.kind.kind, child.name, err)
		}
	}
	status := db.computeStatus(observed{credentialsSecret: db.names().credentials}, time.Now())
	if err := f.applyStatus(ctx, db, status); err != nil {
		return err
	}

	item := f.items[name]
	item.mu.Lock()
	db.status = status // the previous status of the next one: transition times carry over
	item.db = db
	item.firstDone = true
	item.mu.Unlock()
	// The StatefulSet may have rolled out while the first status was written.
	return f.finalStatus(ctx, item)
}

func (f *floor) applyStatus(ctx context.Context, db *database, status map[string]any) error {
	body := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": databaseGVK.GroupVersion().String(),
		"kind":       kindDB,
		"metadata":   map[string]any{"name": db.name, "namespace": db.ns()},
		"status":     status,
	}}
	_, err := f.dyn.Resource(databasesGVR).Namespace(db.ns()).ApplyStatus(ctx, db.name, body, applyOptions)
	f.writes.Add(1)
	return err
}

// finalStatus writes the status computed with the latest StatefulSet seen, once it says Ready.
func (f *floor) finalStatus(ctx context.Context, item *floorItem) error {
	item.mu.Lock()
	sts := item.sts
	if item.finalDone || !item.firstDone || sts == nil {
		item.mu.Unlock()
		return nil
	}
	db := item.db
	status := db.computeStatus(observed{statefulSet: sts, credentialsSecret: db.names().credentials}, time.Now())
	if status["phase"] != "Ready" {
		item.mu.Unlock()
		return nil
	}
	item.finalDone = true
	item.mu.Unlock()
	if err := f.applyStatus(ctx, db, status); err != nil {
		return err
	}
	if f.ready.Add(1) == int64(len(f.items)) {
		f.readyOnce.Do(func() { close(f.allReady) })
	}
	return nil
}

const managedBySelector = "app.kubernetes.io/managed-by=regulon"

func (f *floor) watchPods(ctx context.Context, rv string) (watch.Interface, error) {
	return f.meta.Resource(podsGVR).Namespace(f.ns).Watch(ctx, metav1.ListOptions{
		LabelSelector: managedBySelector, ResourceVersion: rv, AllowWatchBookmarks: true,
	})
}

func (f *floor) watchDatabases(ctx context.Context, rv string) (watch.Interface, error) {
	return f.dyn.Resource(databasesGVR).Namespace(f.ns).Watch(ctx, metav1.ListOptions{
		ResourceVersion: rv, AllowWatchBookmarks: true,
	})
}

func (f *floor) watchStatefulSets(ctx context.Context, rv string) (watch.Interface, error) {
	return f.kube.AppsV1().StatefulSets(f.ns).Watch(ctx, metav1.ListOptions{
		LabelSelector: managedBySelector, ResourceVersion: rv, AllowWatchBookmarks: true,
	})
}

// applyTopology applies the topology ConfigMap.
func (f *floor) applyTopology(ctx context.Context, db *database, t topology) error {
	body := db.topologyConfigMap(t)
	_, err := f.dyn.Resource(childGVRs[kindConfigMap]).Namespace(db.ns()).Apply(ctx, db.names().topology, &unstructured.Unstructured{Object: body}, applyOptions)
	f.writes.Add(1)
	return err
}

// onPod labels a Pod of one of our Databases with its role, once: ordinal 0
// is the primary, as the controller labels it (any other ordinal a replica).
// For the primary, the topology is then recorded as initialised, with its
// Event, as the controller does once the primary is ready.
func (f *floor) onPod(ctx context.Context, obj metav1.Object) {
	labels := obj.GetLabels()
	index, ok := labels[podIndexLabel]
	if !ok || f.items[labels["app.kubernetes.io/instance"]] == nil {
		return
	}
	role := "replica"
	if index == "0" {
		role = "primary"
	}
	if labels[roleLabel] == role {
		return
	}
	if _, loaded := f.labelled.LoadOrStore(obj.GetName(), true); loaded {
		return
	}
	f.spawn(f.followUps, func() error {
		patch := []byte(`{"metadata":{"labels":{"` + roleLabel + `":"` + role + `"}}}`)
		_, err := f.meta.Resource(podsGVR).Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
		f.writes.Add(1)
		if apierrors.IsNotFound(err) || role != "primary" {
			return nil
		}
		if err != nil {
			return err
		}
		item := f.items[labels["app.kubernetes.io/instance"]]
		item.mu.Lock()
		db := item.db
		item.mu.Unlock()
		if db == nil { // its first writes are still under way; rare, and then the floor writes less
			return nil
		}
		t := db.firstTopology()
		t.initialized = true
		if err := f.applyTopology(ctx, db, t); err != nil {
			return err
		}
		return f.initializedEvent(ctx, db, t.primary)
	})
}

func (f *floor) onStatefulSet(ctx context.Context, obj metav1.Object) {
	sts, ok := obj.(*appsv1.StatefulSet)
	if !ok {
		return
	}
	item := f.items[sts.Name]
	if item == nil {
		return
	}
	// Recorded here, in the watch's order: the writes below may run in any order.
	item.mu.Lock()
	item.sts = sts
	item.mu.Unlock()
	f.spawn(f.followUps, func() error { return f.finalStatus(ctx, item) })
}

// spawn runs a write started by a watch event once a slot of its pool is
// free. The watch goes on meanwhile: waiting here would hold up its other
// events, which may belong to the other pool's work.
func (f *floor) spawn(slots chan struct{}, fn func() error) {
	go func() {
		slots <- struct{}{}
		defer func() { <-slots }()
		if err := fn(); err != nil && !errors.Is(err, context.Canceled) {
			f.fail(err)
		}
	}()
}

// watchLoop runs one plain watch, restarting it from the last resource
// version it saw when the server ends it (or from now when that has expired).
func (f *floor) watchLoop(ctx context.Context, what string,
	start func(context.Context, string) (watch.Interface, error),
	handle func(context.Context, metav1.Object),
	opened func(),
) {
	rv := ""
	var once sync.Once
	for ctx.Err() == nil {
		w, err := start(ctx, rv)
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(os.Stderr, "watch %s: %v\n", what, err)
				time.Sleep(time.Second)
			}
			continue
		}
		once.Do(opened)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				if apierrors.IsResourceExpired(apierrors.FromObject(ev.Object)) || apierrors.IsGone(apierrors.FromObject(ev.Object)) {
					rv = ""
				}
				break
			}
			obj, ok := ev.Object.(metav1.Object)
			if !ok {
				continue
			}
			rv = obj.GetResourceVersion()
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				handle(ctx, obj)
			}
		}
		w.Stop()
	}
}

// initializedEvent: the Normal Event the controller writes once the primary has initialised the data set.
func (f *floor) initializedEvent(ctx context.Context, db *database, primary string) error {
	now := metav1.NewMicroTime(time.Now())
	_, err := f.kube.EventsV1().Events(db.ns()).Create(ctx, &eventsv1.Event{
		// Named as client-go's recorder names Events: <object>.<time in hex>.
		ObjectMeta:          metav1.ObjectMeta{Name: db.name + "." + strconv.FormatInt(now.UnixNano(), 16), Namespace: db.ns()},
		EventTime:           now,
		ReportingController: "regulon.dev/" + controllerName,
		ReportingInstance:   "floor",
		Action:              "Reconcile",
		Reason:              "Initialized",
		Note:                primary + " initialised the data set and is the primary",
		Type:                corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{
			APIVersion: databaseGVK.GroupVersion().String(), Kind: kindDB,
			Namespace: db.ns(), Name: db.name, UID: types.UID(jsTemplate(db.uid)),
		},
	}, metav1.CreateOptions{})
	f.writes.Add(1)
	return err
}
