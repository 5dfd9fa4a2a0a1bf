package main

// The manager: controller-runtime's normal setup (metrics server, health
// probes, shared informers with managed fields stripped), with the watches of
// apps/database-controller/src/index.ts.

import (
	"context"
	"flag"
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	controllerName = "database"
	// secretRefIndex indexes Databases by spec.credentials.secretName, so a
	// Secret event finds the Databases waiting for it without a scan.
	secretRefIndex = "spec.credentials.secretName"
)

var databaseGVK = schema.GroupVersionKind{Group: group, Version: version, Kind: kindDB}

// newDatabase: the Database is read as unstructured. There is no generated Go
// type for it, and the rendering works on its JSON anyway (see render.go).
func newDatabase() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(databaseGVK)
	return u
}

// restConfig loads the kubeconfig and sets the client-side rate limit:
// qps <= 0 disables it (a negative QPS is client-go's "no rate limiter").
func restConfig(kubeconfig string, qps float64, burst int) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, err
	}
	if qps <= 0 {
		cfg.QPS = -1
		return cfg, nil
	}
	cfg.QPS = float32(qps)
	if burst > 0 {
		cfg.Burst = burst
	}
	// One token bucket for the whole process. Left to itself, controller-runtime
	// builds a REST client per resource type, each with its own bucket of QPS/Burst,
	// so "50 QPS" would allow 50 per type; Regulon's client has one bucket.
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	return cfg, nil
}

func managerCommand(args []string) error {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "path to a kubeconfig (default: KUBECONFIG or in-cluster)")
	qps := fs.Float64("kube-api-qps", 0, "client-side rate limit in requests per second; <= 0 means unlimited")
	burst := fs.Int("kube-api-burst", 0, "client-side burst (0: client-go's default)")
	concurrency := fs.Int("concurrency", 1, "Databases reconciled at the same time (MaxConcurrentReconciles)")
	metricsAddr := fs.String("metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint")
	probeAddr := fs.String("health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	cfg, err := restConfig(*kubeconfig, *qps, *burst)
	if err != nil {
		return err
	}
	// Opt-in in controller-runtime; Regulon always exports it. The benchmark
	// compares each client's write latency with the API server's own.
	crmetrics.RegisterRESTClientMetrics(crmetrics.MetricRequestLatency)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress: *probeAddr,
		Cache:                  cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		// The Database is unstructured, and controller-runtime's client reads
		// unstructured objects from the API server unless told to use the cache.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Ready once every informer the controller reads from has synced, as
	// Regulon's /readyz is: the benchmark times a restart to this point.
	if err := mgr.AddReadyzCheck("informers", informersSynced(mgr)); err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	if err := setupDatabaseController(ctx, mgr, *concurrency); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func setupDatabaseController(ctx context.Context, mgr ctrl.Manager, concurrency int) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, newDatabase(), secretRefIndex, func(o client.Object) []string {
		name, found, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "spec", "credentials", "secretName")
		if !found || name == "" {
			return nil
		}
		return []string{name}
	}); err != nil {
		return fmt.Errorf("index %s: %w", secretRefIndex, err)
	}
	r := &databaseReconciler{
		client:    mgr.GetClient(),
		apiReader: mgr.GetAPIReader(),
		recorder:  mgr.GetEventRecorder(controllerName),
		clock:     newTroubleClock(),
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		For(newDatabase()).
		// Children in full, not metadata only: reconcile compares them with
		// the desired state and sends nothing when they already match.
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&batchv1.CronJob{}).
		// Secrets only as metadata: the controller never holds credentials in memory.
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.databasesReferencing), builder.OnlyMetadata).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(byInstance), builder.OnlyMetadata).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(byInstance)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// byInstance maps a Pod or Job of a Database (by its recommended labels) to that Database.
func byInstance(_ context.Context, o client.Object) []reconcile.Request {
	labels := o.GetLabels()
	instance := labels["app.kubernetes.io/instance"]
	if instance == "" || labels["app.kubernetes.io/managed-by"] != "regulon" || o.GetNamespace() == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: instance}}}
}

// databasesReferencing maps a Secret to the Databases that name it in
// spec.credentials.secretName: they wait for it to appear.
func (r *databaseReconciler) databasesReferencing(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetNamespace() == "" {
		return nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(databaseGVK.GroupVersion().WithKind(kindDB + "List"))
	if err := r.client.List(ctx, list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{secretRefIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Databases that reference a Secret", "secret", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{
			Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName(),
		}})
	}
	return reqs
}

func informersSynced(mgr ctrl.Manager) healthz.Checker {
	metadataOnly := func(gvk schema.GroupVersionKind) client.Object {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m
	}
	watched := []client.Object{
		newDatabase(), &appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{},
		&corev1.ServiceAccount{}, &policyv1.PodDisruptionBudget{}, &batchv1.CronJob{}, &batchv1.Job{},
		metadataOnly(corev1.SchemeGroupVersion.WithKind("Secret")),
		metadataOnly(corev1.SchemeGroupVersion.WithKind("Pod")),
	}
	return func(req *http.Request) error {
		for _, o := range watched {
			inf, err := mgr.GetCache().GetInformer(req.Context(), o, cache.BlockUntilSynced(false))
			if err != nil {
				return err
			}
			if !inf.HasSynced() {
				return fmt.Errorf("informer for %T not synced", o)
			}
		}
		return nil
	}
}
