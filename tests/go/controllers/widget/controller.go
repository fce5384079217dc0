package widget

import (
	"context"
	"fmt"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Finalizer is the finalizer the controller puts on every Widget: it deletes the Widget's
// ConfigMap before the Widget goes.
const Finalizer = "example.fieldstore.io/cleanup"

// FieldOwner is the controller's field manager in Server-Side Apply.
const FieldOwner = "widget-controller"

// ConfigMapName is the name of a Widget's ConfigMap.
func ConfigMapName(w *Widget) string { return w.Name + "-config" }

// DeploymentName is the name of a Widget's Deployment.
func DeploymentName(w *Widget) string { return w.Name }

// Reconciler makes a Widget's ConfigMap and Deployment what its spec says, by Server-Side
// Apply, with the Widget as their controlling owner, and reports in the Widget's status.
type Reconciler struct {
	client.Client
	Scheme *runtime.Scheme

	// Recorder, when set, records an events.k8s.io/v1 Event on the Widget for each generation
	// applied.
	Recorder recorder.EventRecorder

	// BeforeStatusUpdate, when set, runs just before the status write; the tests race a write
	// of their own there to provoke a 409 Conflict.
	BeforeStatusUpdate func(ctx context.Context, w *Widget)

	// Reconciles counts calls of Reconcile.
	Reconciles atomic.Int64
	// Conflicts counts the writes the server refused with 409 Conflict (each one requeued).
	Conflicts atomic.Int64
	// Cleanups counts the times the finalizer ran to its end.
	Cleanups atomic.Int64
}

// SetupWithManager registers the controller: Widgets, and the ConfigMaps and Deployments they
// control (a change to one requeues its Widget; Deployments watched by their metadata only).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&Widget{}).
		Owns(&corev1.ConfigMap{}).
		// Deployments through a metadata-only informer (PartialObjectMetadata lists and watches).
		Owns(&appsv1.Deployment{}, builder.OnlyMetadata).
		// Each test runs a manager of its own; controller names are otherwise process-wide.
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(r)
}

// Reconcile brings one Widget's objects in line with its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.Reconciles.Add(1)
	var w Widget
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !w.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, &w)
	}
	if controllerutil.AddFinalizer(&w, Finalizer) {
		if err := r.Update(ctx, &w); err != nil {
			return ctrl.Result{}, r.failed(err)
		}
	}
	if err := r.applyConfigMap(ctx, &w); err != nil {
		return ctrl.Result{}, r.failed(err)
	}
	if err := r.applyDeployment(ctx, &w); err != nil {
		return ctrl.Result{}, r.failed(err)
	}
	applied := w.Status.ObservedGeneration != w.Generation
	w.Status.ObservedGeneration = w.Generation
	w.Status.Phase = "Ready"
	w.Status.ConfigMapName = ConfigMapName(&w)
	w.Status.DeploymentName = DeploymentName(&w)
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
		Type:               "Ready",
		Status:             metav1.ConditionTrue,
		Reason:             "Applied",
		Message:            fmt.Sprintf("ConfigMap %s and Deployment %s applied", ConfigMapName(&w), DeploymentName(&w)),
		ObservedGeneration: w.Generation,
	})
	if r.BeforeStatusUpdate != nil {
		r.BeforeStatusUpdate(ctx, &w)
	}
	// A full-object update of the status subresource: a stale resourceVersion is refused (409).
	if err := r.Status().Update(ctx, &w); err != nil {
		return ctrl.Result{}, r.failed(err)
	}
	if applied && r.Recorder != nil {
		r.Recorder.Eventf(&w, nil, corev1.EventTypeNormal, "Applied", "Reconcile", "applied generation %d", w.Generation)
	}
	return ctrl.Result{}, nil
}

// finalize runs the finalizer of a Widget being deleted: its ConfigMap goes, then the finalizer.
// The Deployment is left to the garbage collector (its owner reference), as operators do.
func (r *Reconciler) finalize(ctx context.Context, w *Widget) error {
	if !controllerutil.ContainsFinalizer(w, Finalizer) {
		return nil
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: ConfigMapName(w)}}
	if err := r.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
		return err
	}
	controllerutil.RemoveFinalizer(w, Finalizer)
	if err := r.Update(ctx, w); err != nil {
		return r.failed(err)
	}
	r.Cleanups.Add(1)
	return nil
}

// failed counts a 409 Conflict and returns err, so that controller-runtime requeues the Widget
// (with backoff) and the next Reconcile starts again from the cache's newer copy.
func (r *Reconciler) failed(err error) error {
	if apierrors.IsConflict(err) {
		r.Conflicts.Add(1)
	}
	return err
}

// controllerRef is the owner reference controllerutil.SetControllerReference gives w's objects.
func (r *Reconciler) controllerRef(w *Widget) (metav1.OwnerReference, error) {
	scratch := metav1.ObjectMeta{Namespace: w.Namespace}
	if err := controllerutil.SetControllerReference(w, &scratch, r.Scheme); err != nil {
		return metav1.OwnerReference{}, err
	}
	return scratch.OwnerReferences[0], nil
}

// applyConfigMap applies the ConfigMap through an apply configuration (client.Client.Apply),
// taking over fields another manager changed (ForceOwnership).
func (r *Reconciler) applyConfigMap(ctx context.Context, w *Widget) error {
	ref, err := r.controllerRef(w)
	if err != nil {
		return err
	}
	cm := corev1ac.ConfigMap(ConfigMapName(w), w.Namespace).
		WithLabels(map[string]string{"app.kubernetes.io/managed-by": FieldOwner, "example.fieldstore.io/widget": w.Name}).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(ref.APIVersion).WithKind(ref.Kind).WithName(ref.Name).WithUID(ref.UID).
			WithController(true).WithBlockOwnerDeletion(true)).
		WithData(w.Spec.Data)
	return r.Apply(ctx, cm, client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// applyDeployment applies the Deployment the older way many operators still use: a typed object
// with SetControllerReference, sent as an apply patch (client.Apply), zero values and all.
func (r *Reconciler) applyDeployment(ctx context.Context, w *Widget) error {
	labels := map[string]string{"example.fieldstore.io/widget": w.Name}
	image := w.Spec.Image
	if image == "" {
		image = "registry.k8s.io/pause:3.10"
	}
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: DeploymentName(w), Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: w.Spec.Replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "widget",
					Image: image,
					EnvFrom: []corev1.EnvFromSource{{
						ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(w)}},
					}},
				}}},
			},
		},
	}
	if err := controllerutil.SetControllerReference(w, dep, r.Scheme); err != nil {
		return err
	}
	//nolint:staticcheck // the deprecated form is the one most operators in the wild send
	return r.Patch(ctx, dep, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership)
}
