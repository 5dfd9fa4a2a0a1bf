package main

// The framework-bound subject (`reference-go framework`): one controller on
// controller-runtime with a trivial reconcile, for tools/bench/framework.ts.
// Its objects exist before it starts, so what is measured is the framework's
// own work: listing and caching them, handling watch events, running the queue.
//
// It speaks the harness's line protocol (tools/bench/framework/protocol.ts):
// JSON lines on stdout, one command a line on stdin.
//
//	out {"ev":"synced","ms":…,"heapBefore":…}   the cache synced, ms after the manager started
//	out {"ev":"initial","ms":…,"reconciles":…}  every cached object reconciled once
//	in  stats             out {"ev":"stats","events":…,"reconciles":…,"heap":…,"objects":…}
//	in  expect U          out {"ev":"seen","events":U,"ms":…} once U more events were handled
//	in  requeue           out {"ev":"drained","count":…,"ms":…} once every key, added at once, was reconciled
//
// heap is the Go heap after a full collection (HeapAlloc), as Node's is
// heapUsed after gc(): the bytes the live objects hold.

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// The benchmark's custom resource (tools/bench/framework/population.ts defines its CRD).
var widgetGVK = schema.GroupVersionKind{Group: "bench.regulon.dev", Version: "v1", Kind: "Widget"}

type frameworkSubject struct {
	out        *json.Encoder
	outMu      sync.Mutex
	events     atomic.Int64
	reconciles atomic.Int64
	newObject  func() client.Object
	newList    func() client.ObjectList
	reader     client.Reader
	namespace  string

	queueMu sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[reconcile.Request]

	// A waiter for "expect" or "requeue": done once its counter reaches target.
	waitMu sync.Mutex
	waiter *frameworkWaiter
}

type frameworkWaiter struct {
	counter *atomic.Int64
	target  int64
	started time.Time
	report  func(ms float64)
}

func (s *frameworkSubject) emit(v map[string]any) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_ = s.out.Encode(v)
}

// check fires the pending waiter once its count is reached: called after every event and reconcile.
func (s *frameworkSubject) check() {
	s.waitMu.Lock()
	w := s.waiter
	if w == nil || w.counter.Load() < w.target {
		s.waitMu.Unlock()
		return
	}
	s.waiter = nil
	s.waitMu.Unlock()
	w.report(float64(time.Since(w.started).Microseconds()) / 1000)
}

// waitUntil reports once counter reaches target. The target is absolute:
// workers move the counter concurrently, so "n more than now" read in two
// places could name a count that is never reached.
func (s *frameworkSubject) waitUntil(counter *atomic.Int64, target int64, report func(ms float64)) {
	s.waitMu.Lock()
	s.waiter = &frameworkWaiter{counter: counter, target: target, started: time.Now(), report: report}
	s.waitMu.Unlock()
	s.check()
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Reconcile is the trivial reconcile of the benchmark: one cached read, one status check, no write.
func (s *frameworkSubject) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := s.newObject()
	err := s.reader.Get(ctx, req.NamespacedName, obj)
	if err == nil {
		_ = statusReady(obj)
	}
	s.reconciles.Add(1)
	s.check()
	return reconcile.Result{}, client.IgnoreNotFound(err)
}

// statusReady: a Widget's status.phase, or a ConfigMap's data.phase (ConfigMaps have no status).
func statusReady(obj client.Object) bool {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		phase, _, _ := unstructured.NestedString(o.Object, "status", "phase")
		return phase == "Ready"
	case *corev1.ConfigMap:
		return o.Data["phase"] == "Ready"
	}
	return false
}

func (s *frameworkSubject) requeueAll(ctx context.Context) error {
	list := s.newList()
	if err := s.reader.List(ctx, list, client.InNamespace(s.namespace)); err != nil {
		return err
	}
	var keys []reconcile.Request
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		for i := range l.Items {
			keys = append(keys, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: l.Items[i].GetNamespace(), Name: l.Items[i].GetName()}})
		}
	case *corev1.ConfigMapList:
		for i := range l.Items {
			keys = append(keys, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: l.Items[i].Namespace, Name: l.Items[i].Name}})
		}
	}
	s.queueMu.Lock()
	q := s.queue
	s.queueMu.Unlock()
	if q == nil {
		return fmt.Errorf("the controller has not started its sources")
	}
	count := len(keys)
	// Nothing else is queued now: every object was reconciled once already.
	s.waitUntil(&s.reconciles, s.reconciles.Load()+int64(count), func(ms float64) {
		s.emit(map[string]any{"ev": "drained", "count": count, "ms": ms})
	})
	for _, k := range keys {
		q.Add(k)
	}
	return nil
}

func (s *frameworkSubject) objects(ctx context.Context) int {
	list := s.newList()
	if err := s.reader.List(ctx, list, client.InNamespace(s.namespace)); err != nil {
		return -1
	}
	return itemCount(list)
}

func itemCount(list client.ObjectList) int {
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		return len(l.Items)
	case *corev1.ConfigMapList:
		return len(l.Items)
	}
	return 0
}

// commands serves the harness's stdin commands until it closes.
func (s *frameworkSubject) commands(ctx context.Context) {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fields := strings.Fields(in.Text())
		if len(fields) == 0 {
			continue
		}
		switch fields[0] {
		case "stats":
			s.emit(map[string]any{"ev": "stats", "events": s.events.Load(), "reconciles": s.reconciles.Load(),
				"heap": heapAfterGC(), "objects": s.objects(ctx)})
		case "expect":
			n, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil || n < 1 {
				s.emit(map[string]any{"ev": "error", "message": "expect: a positive count"})
				continue
			}
			// Sent before the writer starts, so no event of its own has arrived yet.
			s.waitUntil(&s.events, s.events.Load()+n, func(ms float64) { s.emit(map[string]any{"ev": "seen", "events": n, "ms": ms}) })
		case "requeue":
			if err := s.requeueAll(ctx); err != nil {
				s.emit(map[string]any{"ev": "error", "message": err.Error()})
			}
		default:
			s.emit(map[string]any{"ev": "error", "message": "unknown command " + fields[0]})
		}
	}
}

func frameworkCommand(args []string) error {
	fs := flag.NewFlagSet("framework", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "path to a kubeconfig")
	kind := fs.String("kind", "widgets", "widgets (the benchmark's custom resource) or configmaps")
	namespace := fs.String("namespace", "", "the namespace to cache and reconcile")
	allNamespaces := fs.Bool("all-namespaces", false, "cache and reconcile the kind in every namespace, one cluster-wide informer (the sharded benchmark)")
	probeAddr := fs.String("health-probe-bind-address", "127.0.0.1:0", "address of /readyz")
	concurrency := fs.Int("concurrency", 1, "MaxConcurrentReconciles")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *namespace == "" && !*allNamespaces {
		return fmt.Errorf("--namespace or --all-namespaces is required")
	}
	if *allNamespaces {
		// client.InNamespace("") lists every namespace's objects.
		*namespace = ""
	}
	ctrl.SetLogger(zap.New())
	heapBefore := heapAfterGC()
	cfg, err := restConfig(*kubeconfig, 0, 0)
	if err != nil {
		return err
	}
	scheme := k8sruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	s := &frameworkSubject{out: json.NewEncoder(os.Stdout), namespace: *namespace}
	switch *kind {
	case "widgets":
		s.newObject = func() client.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(widgetGVK)
			return u
		}
		s.newList = func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(widgetGVK.GroupVersion().WithKind("WidgetList"))
			return l
		}
	case "configmaps":
		s.newObject = func() client.Object { return &corev1.ConfigMap{} }
		s.newList = func() client.ObjectList { return &corev1.ConfigMapList{} }
	default:
		return fmt.Errorf("--kind: widgets or configmaps, not %q", *kind)
	}
	cacheOptions := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if !*allNamespaces {
		cacheOptions.DefaultNamespaces = map[string]cache.Config{*namespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: *probeAddr,
		Cache:                  cacheOptions,
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		return err
	}
	s.reader = mgr.GetClient()
	if err := mgr.AddReadyzCheck("informers", func(req *http.Request) error {
		inf, err := mgr.GetCache().GetInformer(req.Context(), s.newObject(), cache.BlockUntilSynced(false))
		if err != nil {
			return err
		}
		if !inf.HasSynced() {
			return fmt.Errorf("not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	counted := func() bool { s.events.Add(1); s.check(); return true }
	err = ctrl.NewControllerManagedBy(mgr).
		Named("framework").
		For(s.newObject()).
		// Counts the events the controller handles, as they reach its handler.
		WithEventFilter(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return counted() },
			UpdateFunc:  func(event.UpdateEvent) bool { return counted() },
			DeleteFunc:  func(event.DeleteEvent) bool { return counted() },
			GenericFunc: func(event.GenericEvent) bool { return true },
		}).
		// Keeps the controller's queue, so that "requeue" can add every key at once.
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			s.queueMu.Lock()
			s.queue = q
			s.queueMu.Unlock()
			return nil
		})).
		WithOptions(controller.Options{MaxConcurrentReconciles: *concurrency}).
		Complete(s)
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	started := time.Now()
	// The controller's informer, registered now so that it starts with the
	// cache. The cache's own WaitForCacheSync would return at once: it waits
	// only for informers that exist, and the controller asks for its own
	// only when it starts.
	informer, err := mgr.GetCache().GetInformer(ctx, s.newObject(), cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	go func() {
		// Polled each millisecond: client-go's informer has no sync notification.
		for !informer.HasSynced() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
		s.emit(map[string]any{"ev": "synced", "ms": float64(time.Since(started).Microseconds()) / 1000, "heapBefore": heapBefore})
		total := int64(s.objects(ctx))
		// Every cached object arrived as a create event, so each is reconciled once.
		s.waitUntil(&s.reconciles, total, func(float64) {
			s.emit(map[string]any{"ev": "initial", "ms": float64(time.Since(started).Microseconds()) / 1000, "reconciles": total})
		})
		go s.commands(ctx)
	}()
	return mgr.Start(ctx)
}
