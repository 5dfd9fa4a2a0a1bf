package main

// Reconciles one Database, step by step as apps/database-controller/src/reconciler.ts:
// credentials and (postgres) the replication Secret created once, the
// topology read from the API server and created when absent, children by
// server-side apply (skipped when the cached child has converged), the
// replication step (replication.go: Pod roles, the topology initialised),
// volume growth, and the status, written only when it changed.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

const podIndexLabel = "apps.kubernetes.io/pod-index"

type databaseReconciler struct {
	client    client.Client // reads from the informer cache, writes to the API server
	apiReader client.Reader // uncached reads (PersistentVolumeClaims, the topology, the Pods' readiness)
	recorder  recorder.EventRecorder
	clock     *troubleClock
}

// alreadyOwnedError: a child's name is taken by an object another controller
// controls. Adopting it would steal it, so it is reported instead.
type alreadyOwnedError struct{ msg string }

func (e *alreadyOwnedError) Error() string { return e.msg }

func (r *databaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := newDatabase()
	if err := r.client.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if u.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil // garbage collection removes the children
	}
	db, err := parseDatabase(u.Object)
	if err != nil {
		return ctrl.Result{}, err
	}
	names := db.names()
	ns := req.Namespace

	if len(db.name) > maxNameLen {
		return ctrl.Result{}, r.finish(ctx, u, db, observed{
			problem: &problem{
				reason: "NameTooLong",
				message: fmt.Sprintf("name is %d characters; at most %d fit the names derived from it "+
					"(StatefulSet Pods, backup Jobs). Recreate the Database with a shorter name.", len(db.name), maxNameLen),
			},
			credentialsSecret: names.credentials,
		})
	}

	// Credentials: a referenced Secret must exist; a generated one is created once and never rewritten.
	var prob *problem
	credentials := &metav1.PartialObjectMetadata{}
	credentials.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	haveCredentials, err := r.cached(ctx, ns, names.credentials, credentials)
	if err != nil {
		return ctrl.Result{}, err
	}
	if db.referencesSecret() {
		if !haveCredentials {
			prob = &problem{
				reason:  "CredentialsSecretMissing",
				message: fmt.Sprintf("Secret %s named in spec.credentials.secretName does not exist in %s", names.credentials, ns),
			}
		}
	} else if haveCredentials && !controlledBy(credentials, u.GetUID()) {
		prob = conflictProblem(kindSecret, credentials)
	} else if !haveCredentials {
		lost, err := r.createOnce(ctx, u, db, names.credentials, func() map[string]any { return db.credentialsSecret(generatePassword()) })
		var owned *alreadyOwnedError
		switch {
		case errors.As(err, &owned):
			prob = &problem{reason: "ChildConflict", message: owned.msg + ". To use it as this Database's credentials, set spec.credentials.secretName: " + names.credentials + "."}
		case err != nil:
			return ctrl.Result{}, err
		case lost:
			prob = &problem{
				reason: "CredentialsSecretLost",
				message: fmt.Sprintf("Secret %s with the generated credentials is gone, but the data volume still uses its password: "+
					"restore the Secret %s from a backup. A new password would not open the existing data, so none is generated.", names.credentials, names.credentials),
			}
		}
	}
	// The replication role's password (postgres), created once like the credentials.
	if prob == nil && db.engine == "postgres" {
		secret := &metav1.PartialObjectMetadata{}
		secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		have, err := r.cached(ctx, ns, names.replicationCredentials, secret)
		if err != nil {
			return ctrl.Result{}, err
		}
		if have && !controlledBy(secret, u.GetUID()) {
			prob = conflictProblem(kindSecret, secret)
		} else if !have {
			lost, err := r.createOnce(ctx, u, db, names.replicationCredentials, func() map[string]any { return db.replicationSecret(generatePassword()) })
			var owned *alreadyOwnedError
			switch {
			case errors.As(err, &owned):
				prob = &problem{reason: "ChildConflict", message: owned.msg + "; not adopting it"}
			case err != nil:
				return ctrl.Result{}, err
			case lost:
				prob = &problem{
					reason: "ReplicationSecretLost",
					message: fmt.Sprintf("Secret %s with the replication password is gone, but the data volumes still use it: "+
						"restore the Secret %s from a backup. A new password would not match the role in the data, so none is generated.",
						names.replicationCredentials, names.replicationCredentials),
				}
			}
		}
	}

	// The live StatefulSet's claim size: the template keeps the size it was
	// created with (volumeClaimTemplates are immutable), volumes grow on the PVCs.
	liveSts := &appsv1.StatefulSet{}
	haveSts, err := r.cached(ctx, ns, names.statefulSet, liveSts)
	if err != nil {
		return ctrl.Result{}, err
	}
	createdSize := ""
	if haveSts && len(liveSts.Spec.VolumeClaimTemplates) > 0 {
		if q, ok := liveSts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			createdSize = q.String()
		}
	}

	var view *replicationView
	var result ctrl.Result
	if prob == nil {
		// The recorded topology, from the API server: a cache a moment behind
		// this controller's own last write would name a former primary again.
		t := db.firstTopology()
		recorded, err := r.recordedTopology(ctx, ns, names.topology)
		if err != nil {
			return ctrl.Result{}, err
		}
		if recorded != nil {
			t = *recorded
		}
		if db.topologyDue(recorded) {
			// The Pods read the topology when they start: it exists before they do.
			err = r.applyOne(ctx, u, kindConfigMap, names.topology, db.topologyConfigMap(t), nil)
		}
		if err == nil {
			err = r.applyChildren(ctx, u, db, createdSize, db.instanceCount(t), liveSts, haveSts)
		}
		if err == nil {
			var d replicationDecision
			d, err = r.reconcileReplication(ctx, u, db, t)
			view = &d.view
			result.RequeueAfter = d.requeueAfter
		}
		if err == nil {
			err = r.growVolumes(ctx, db, createdSize)
		}
		var owned *alreadyOwnedError
		if errors.As(err, &owned) {
			prob = &problem{reason: "ChildConflict", message: owned.msg + "; not adopting it"}
			view, result = nil, ctrl.Result{}
		} else if err != nil {
			return ctrl.Result{}, err
		}
	}

	// Observe after writing, as the TypeScript controller does: the cache may
	// already hold what the applies changed.
	o := observed{problem: prob, credentialsSecret: names.credentials, replication: view}
	sts := &appsv1.StatefulSet{}
	if found, err := r.cached(ctx, ns, names.statefulSet, sts); err != nil {
		return ctrl.Result{}, err
	} else if found && controlledBy(sts, u.GetUID()) {
		o.statefulSet = sts
	}
	jobs := &batchv1.JobList{}
	if err := r.client.List(ctx, jobs, client.InNamespace(ns), client.MatchingLabels{
		"app.kubernetes.io/instance":  db.name,
		"app.kubernetes.io/component": "database",
	}); err != nil {
		return ctrl.Result{}, err
	}
	o.backupJobs = jobs.Items
	// A missing referenced Secret heals when it appears (the Secret watch wakes us); nothing to poll.
	return result, r.finish(ctx, u, db, o)
}

// cached reads one object from the informer cache; found is false when it does not exist.
func (r *databaseReconciler) cached(ctx context.Context, ns, name string, obj client.Object) (bool, error) {
	err := r.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// finish reports a problem as a Warning Event, and writes the status if it changed.
func (r *databaseReconciler) finish(ctx context.Context, u *unstructured.Unstructured, db *database, o observed) error {
	if o.problem != nil {
		r.recorder.Eventf(u, nil, corev1.EventTypeWarning, o.problem.reason, "Reconcile", "%s", o.problem.message)
	}
	status := db.computeStatus(o, time.Now())
	if jsonEqual(u.Object["status"], status) {
		return nil // a reconcile that changes nothing writes nothing, so it wakes no watcher
	}
	patch := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": databaseGVK.GroupVersion().String(),
		"kind":       kindDB,
		"metadata":   map[string]any{"name": u.GetName(), "namespace": u.GetNamespace()},
		"status":     status,
	}}
	if err := r.client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(patch),
		client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("status updated", "phase", status["phase"])
	return nil
}

// createOnce (createOnce/createSecretOnce): a Secret generated once and never
// rewritten, so a password is never regenerated behind the application's
// back. While a data volume exists, the data holds the old password: nothing
// is generated, a dry-run create tells whether the Secret is really gone
// (lost), or only not in the cache yet. A Secret that exists after all is
// this Database's only if it controls it.
func (r *databaseReconciler) createOnce(
	ctx context.Context, u *unstructured.Unstructured, db *database, name string, build func() map[string]any,
) (lost bool, err error) {
	inUse, err := r.hasDataVolume(ctx, db)
	if err != nil {
		return false, err
	}
	if inUse {
		probe := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": u.GetNamespace()},
		}}
		err := r.client.Create(ctx, probe, client.FieldOwner(fieldOwner), client.DryRunAll)
		if apierrors.IsAlreadyExists(err) {
			return false, r.existsIfControlled(ctx, u, name)
		}
		return err == nil, err
	}
	secret := &unstructured.Unstructured{Object: build()}
	err = r.client.Create(ctx, secret, client.FieldOwner(fieldOwner))
	if apierrors.IsAlreadyExists(err) {
		return false, r.existsIfControlled(ctx, u, name)
	}
	if err == nil {
		ctrl.LoggerFrom(ctx).Info("created generated Secret", "secret", name)
	}
	return false, err
}

// existsIfControlled: a Secret the cache had not shown exists after all. Its
// metadata only is read (a list by name, as the TypeScript runtime does).
func (r *databaseReconciler) existsIfControlled(ctx context.Context, u *unstructured.Unstructured, name string) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := r.apiReader.List(ctx, list, client.InNamespace(u.GetNamespace()),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)}); err != nil {
		return err
	}
	if len(list.Items) > 0 {
		if ref := controllerOf(&list.Items[0]); ref != nil && ref.UID != u.GetUID() {
			return &alreadyOwnedError{msg: fmt.Sprintf("Secret %s/%s is already controlled by %s %s", u.GetNamespace(), name, ref.Kind, ref.Name)}
		}
	}
	return nil
}

// conflictProblem: a cached Secret this Database does not control.
func conflictProblem(k childKind, obj metav1.Object) *problem {
	held := "was not created by it"
	if ref := controllerOf(obj); ref != nil {
		held = "is already controlled by " + ref.Kind + " " + ref.Name
	}
	return &problem{reason: "ChildConflict", message: fmt.Sprintf("%s %s/%s %s; not adopting it",
		k.kind, obj.GetNamespace(), obj.GetName(), held)}
}

// hasDataVolume: a data volume claim of ordinal 0..replicas-1 exists, read
// from the API server (a cache that has not seen a claim would answer "no data").
func (r *databaseReconciler) hasDataVolume(ctx context.Context, db *database) (bool, error) {
	for i := 0; float64(i) < db.replicas; i++ {
		pvc := &corev1.PersistentVolumeClaim{}
		err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: jsString(db.namespace), Name: "data-" + db.names().statefulSet + "-" + strconv.Itoa(i)}, pvc)
		if err == nil {
			return true, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, err
		}
	}
	return false, nil
}

// recordedTopology: the topology ConfigMap from the API server; nil when none is recorded.
func (r *databaseReconciler) recordedTopology(ctx context.Context, ns, name string) (*topology, error) {
	cm := &corev1.ConfigMap{}
	err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return topologyOf(cm.Data), nil
}

// reconcileReplication: the Database's Pods from the API server (their
// readiness now, not as a cache last saw it), the plan, and its calls.
func (r *databaseReconciler) reconcileReplication(
	ctx context.Context, u *unstructured.Unstructured, db *database, t topology,
) (replicationDecision, error) {
	pods := &corev1.PodList{}
	sel := map[string]string{}
	for k, v := range db.selector() {
		sel[k] = v.(string)
	}
	if err := r.apiReader.List(ctx, pods, client.InNamespace(u.GetNamespace()), client.MatchingLabels(sel)); err != nil {
		return replicationDecision{}, err
	}
	d := db.decideReplication(t, pods.Items, r.clock, time.Now().UnixMilli())
	log := ctrl.LoggerFrom(ctx)
	for _, a := range d.actions {
		var err error
		switch a.Verb {
		case "patch":
			body, _ := json.Marshal(a.Body)
			var target client.Object
			if a.Kind == kindDB {
				target = u
			} else {
				p := &metav1.PartialObjectMetadata{}
				p.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
				p.SetNamespace(a.Namespace)
				p.SetName(a.Name)
				target = p
			}
			err = client.IgnoreNotFound(r.client.Patch(ctx, target, client.RawPatch(types.MergePatchType, body)))
		case "apply":
			err = r.applyOne(ctx, u, kindConfigMap, a.Name, a.Apply, nil)
		case "event":
			r.recorder.Eventf(u, nil, a.EventType, a.Reason, "Reconcile", "%s", a.Message)
			log.Info(a.Message, "reason", a.Reason)
		case "delete":
			p := &corev1.Pod{}
			p.SetNamespace(a.Namespace)
			p.SetName(a.Name)
			uid := types.UID(a.Preconditions["uid"].(string))
			opts := []client.DeleteOption{client.Preconditions{UID: &uid}}
			if a.GracePeriodSeconds != nil {
				opts = append(opts, client.GracePeriodSeconds(*a.GracePeriodSeconds))
			}
			err = client.IgnoreNotFound(r.client.Delete(ctx, p, opts...))
		}
		if err != nil {
			return d, err
		}
	}
	if w := d.view.plan.waiting; w != "" {
		log.Info("replication", "waiting", w)
	}
	return d, nil
}

// generatePassword: 24 random bytes (192 bits) as URL-safe base64.
func generatePassword() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// newChild is an empty typed object to read a child of that kind from the cache.
func newChild(k childKind) client.Object {
	switch k {
	case kindServiceAccount:
		return &corev1.ServiceAccount{}
	case kindConfigMap:
		return &corev1.ConfigMap{}
	case kindService:
		return &corev1.Service{}
	case kindStatefulSet:
		return &appsv1.StatefulSet{}
	case kindPDB:
		return &policyv1.PodDisruptionBudget{}
	case kindCronJob:
		return &batchv1.CronJob{}
	}
	panic("unknown child kind " + k.kind)
}

func controllerOf(obj metav1.Object) *metav1.OwnerReference {
	return metav1.GetControllerOfNoCopy(obj)
}

func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := controllerOf(obj)
	return ref != nil && ref.UID == uid
}

// applyChildren applies every desired child in order, and deletes the ones
// no longer wanted if this Database controls them. liveSts is the cached
// StatefulSet, already read by the caller.
func (r *databaseReconciler) applyChildren(
	ctx context.Context, u *unstructured.Unstructured, db *database,
	createdSize string, instances float64, liveSts *appsv1.StatefulSet, haveSts bool,
) error {
	children := db.desiredChildren(createdSize, instances)
	// Applied first, deleted after, as the TypeScript reconcile does.
	for _, child := range children {
		if child.body == nil {
			continue
		}
		var live client.Object
		if child.kind == kindStatefulSet && haveSts {
			live = liveSts
		}
		if err := r.applyOne(ctx, u, child.kind, child.name, child.body, live); err != nil {
			return err
		}
	}
	for _, child := range children {
		if child.body != nil {
			continue
		}
		existing := newChild(child.kind)
		found, err := r.cached(ctx, u.GetNamespace(), child.name, existing)
		if err != nil {
			return err
		}
		if found && controlledBy(existing, u.GetUID()) {
			if err := r.client.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
				return err
			}
			ctrl.LoggerFrom(ctx).Info("deleted child no longer wanted", "kind", child.kind.kind, "name", child.name)
		}
	}
	return nil
}

// applyOne applies one child unless the cached one has converged (live: the
// cached object when the caller has it already, else it is read here). A
// same-named object another controller controls is reported, not adopted.
func (r *databaseReconciler) applyOne(
	ctx context.Context, u *unstructured.Unstructured, k childKind, name string, body map[string]any, live client.Object,
) error {
	if live == nil {
		obj := newChild(k)
		found, err := r.cached(ctx, u.GetNamespace(), name, obj)
		if err != nil {
			return err
		}
		if found {
			live = obj
		}
	}
	if live != nil {
		if ref := controllerOf(live); ref != nil && ref.UID != u.GetUID() {
			return &alreadyOwnedError{msg: fmt.Sprintf("%s %s/%s is already controlled by %s %s",
				k.kind, live.GetNamespace(), live.GetName(), ref.Kind, ref.Name)}
		}
		converged, err := childConverged(body, live)
		if err != nil {
			return err
		}
		if converged {
			return nil // a converged child costs no request
		}
	}
	apply := &unstructured.Unstructured{Object: body}
	return r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(apply),
		client.FieldOwner(fieldOwner), client.ForceOwnership)
}

// childConverged: the cheap hash check on the typed object first; only when
// it matches is the object converted to JSON form to compare field by field.
func childConverged(body map[string]any, live client.Object) (bool, error) {
	want, _ := annotation(body, appliedHashAnnotation)
	if live.GetAnnotations()[appliedHashAnnotation] != want {
		return false, nil
	}
	liveMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return false, err
	}
	return isConverged(body, liveMap), nil
}

// growVolumes: storage grows on the PVCs themselves; the StatefulSet template can't change.
func (r *databaseReconciler) growVolumes(ctx context.Context, db *database, created string) error {
	want := db.storageSize
	// Volumes start at the template's size: until the spec asks for more, there is nothing to read.
	if created == "" {
		return nil
	}
	wantValue, ok := quantityValue(want)
	if !ok {
		return fmt.Errorf("not a quantity: %s", want)
	}
	createdValue, ok := quantityValue(created)
	if !ok {
		return fmt.Errorf("not a quantity: %s", created)
	}
	if wantValue <= createdValue {
		return nil
	}
	ns := jsString(db.namespace)
	for i := 0; float64(i) < db.replicas; i++ {
		name := "data-" + db.names().statefulSet + "-" + strconv.Itoa(i)
		pvc := &corev1.PersistentVolumeClaim{}
		if err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pvc); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if !ok {
			continue
		}
		have := q.String()
		if have == want {
			continue
		}
		haveValue, ok := quantityValue(have)
		if !ok {
			return fmt.Errorf("not a quantity: %s", have)
		}
		if wantValue <= haveValue {
			continue
		}
		body, _ := json.Marshal(map[string]any{"spec": map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": want}}}})
		if err := r.client.Patch(ctx, pvc, client.RawPatch(types.MergePatchType, body)); err != nil {
			return err
		}
		ctrl.LoggerFrom(ctx).Info("growing volume", "pvc", name, "from", have, "to", want)
	}
	return nil
}
