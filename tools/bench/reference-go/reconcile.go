package main

// Reconciles one Database, step by step as apps/database-controller/src/reconciler.ts:
// children by server-side apply (skipped when the cached child has
// converged), credentials created once, Pod roles, volume growth, and the
// status, written only when it changed.

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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

const podIndexLabel = "apps.kubernetes.io/pod-index"

type databaseReconciler struct {
	client    client.Client // reads from the informer cache, writes to the API server
	apiReader client.Reader // uncached reads (PersistentVolumeClaims are not watched)
	recorder  recorder.EventRecorder
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
	} else if !haveCredentials {
		if err := r.createCredentials(ctx, db); err != nil {
			return ctrl.Result{}, err
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

	if prob == nil {
		err := r.applyChildren(ctx, u, db, createdSize, liveSts, haveSts)
		if err == nil {
			err = r.labelRoles(ctx, db, liveSts, haveSts)
		}
		if err == nil {
			err = r.growVolumes(ctx, db, createdSize)
		}
		var owned *alreadyOwnedError
		if errors.As(err, &owned) {
			prob = &problem{reason: "ChildConflict", message: owned.msg + "; not adopting it"}
		} else if err != nil {
			return ctrl.Result{}, err
		}
	}

	// Observe after writing, as the TypeScript controller does: the cache may
	// already hold what the applies changed.
	o := observed{problem: prob, credentialsSecret: names.credentials}
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
	return ctrl.Result{}, r.finish(ctx, u, db, o)
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

// createCredentials creates the generated Secret. AlreadyExists (a create that
// raced with another, or a cache that has not seen it yet) is success: the
// password is never regenerated behind the application's back.
func (r *databaseReconciler) createCredentials(ctx context.Context, db *database) error {
	secret := &unstructured.Unstructured{Object: db.credentialsSecret(generatePassword())}
	err := r.client.Create(ctx, secret, client.FieldOwner(fieldOwner))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		ctrl.LoggerFrom(ctx).Info("generated credentials", "secret", secret.GetName())
	}
	return err
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
	createdSize string, liveSts *appsv1.StatefulSet, haveSts bool,
) error {
	uid := u.GetUID()
	for _, child := range db.desiredChildren(createdSize) {
		var existing client.Object
		if child.kind == kindStatefulSet {
			if haveSts {
				existing = liveSts
			}
		} else {
			obj := newChild(child.kind)
			found, err := r.cached(ctx, u.GetNamespace(), child.name, obj)
			if err != nil {
				return err
			}
			if found {
				existing = obj
			}
		}

		if child.body == nil {
			if existing != nil && controlledBy(existing, uid) {
				if err := r.client.Delete(ctx, existing); client.IgnoreNotFound(err) != nil {
					return err
				}
				ctrl.LoggerFrom(ctx).Info("deleted child no longer wanted", "kind", child.kind.kind, "name", child.name)
			}
			continue
		}
		if existing != nil {
			if ref := controllerOf(existing); ref != nil && ref.UID != uid {
				return &alreadyOwnedError{msg: fmt.Sprintf("%s %s/%s is already controlled by %s %s",
					child.kind.kind, existing.GetNamespace(), existing.GetName(), ref.Kind, ref.Name)}
			}
			converged, err := childConverged(child.body, existing)
			if err != nil {
				return err
			}
			if converged {
				continue // a converged child costs no request
			}
		}
		apply := &unstructured.Unstructured{Object: child.body}
		if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(apply),
			client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return err
		}
	}
	return nil
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

// labelRoles: ordinal 0 is the primary. The client Service selects
// role=primary, the read-only one role=replica. Pods are read by their
// StatefulSet names (<name>-<ordinal>) rather than by listing the namespace
// with a selector, whose cost grows with every Pod in the namespace.
func (r *databaseReconciler) labelRoles(ctx context.Context, db *database, sts *appsv1.StatefulSet, haveSts bool) error {
	ns := jsString(db.namespace)
	count := int(db.replicas)
	// Ordinals above spec.replicas may still run while scaling down.
	if haveSts && int(sts.Status.Replicas) > count {
		count = int(sts.Status.Replicas)
	}
	for i := 0; i < count; i++ {
		pod := &metav1.PartialObjectMetadata{}
		pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		key := types.NamespacedName{Namespace: ns, Name: db.names().statefulSet + "-" + strconv.Itoa(i)}
		if err := r.client.Get(ctx, key, pod); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return err
		}
		matches := true
		for k, v := range db.selector() {
			if pod.Labels[k] != v.(string) {
				matches = false
			}
		}
		index, ok := pod.Labels[podIndexLabel]
		if !matches || !ok {
			continue
		}
		role := "replica"
		if index == "0" {
			role = "primary"
		}
		if current, ok := pod.Labels[roleLabel]; ok && current == role {
			continue
		}
		patch := rolePatch(role)
		if err := r.client.Patch(ctx, pod, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

func rolePatch(role string) []byte {
	return []byte(`{"metadata":{"labels":{"` + roleLabel + `":"` + role + `"}}}`)
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
