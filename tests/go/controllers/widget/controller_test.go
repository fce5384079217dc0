package widget_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"fieldstore.io/tests/controllers/widget"
)

func newWidget(ns, name string, data map[string]string, replicas int32) *widget.Widget {
	return &widget.Widget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       widget.WidgetSpec{Data: data, Replicas: ptr.To(replicas)},
	}
}

// ready waits until the server's copy of the Widget reports Ready for its current generation,
// and returns it.
func (e *env) ready(t *testing.T, name string) *widget.Widget {
	t.Helper()
	var w widget.Widget
	eventually(t, "widget "+name+" ready", func() (bool, string) {
		if err := e.direct.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, &w); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(w.Status.Conditions, "Ready")
		ok := w.Status.Phase == "Ready" && w.Status.ObservedGeneration == w.Generation &&
			c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
		return ok, fmt.Sprintf("generation %d status %+v", w.Generation, w.Status)
	})
	return &w
}

// configMap reads the Widget's ConfigMap from the server.
func (e *env) configMap(t *testing.T, name string) (*corev1.ConfigMap, error) {
	t.Helper()
	var cm corev1.ConfigMap
	err := e.direct.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name + "-config"}, &cm)
	return &cm, err
}

// controlledBy checks that obj's one controller reference is w.
func controlledBy(t *testing.T, obj metav1.Object, w *widget.Widget) {
	t.Helper()
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		t.Fatalf("%s has no controller reference: %+v", obj.GetName(), obj.GetOwnerReferences())
	}
	if ref.UID != w.UID || ref.Kind != "Widget" || ref.APIVersion != "example.fieldstore.io/v1" || ref.Name != w.Name ||
		!ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("%s's controller reference %+v, want Widget %s (%s) blocking deletion", obj.GetName(), *ref, w.Name, w.UID)
	}
}

// managerFields is the field set (FieldsV1, as JSON) the named manager holds with operation op.
func managerFields(t *testing.T, obj metav1.Object, manager string, op metav1.ManagedFieldsOperationType) map[string]any {
	t.Helper()
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.Operation == op {
			var set map[string]any
			if err := json.Unmarshal(mf.FieldsV1.Raw, &set); err != nil {
				t.Fatalf("managedFields of %s: %v", manager, err)
			}
			return set
		}
	}
	return nil
}

// The controller converges: finalizer on, ConfigMap and Deployment applied and controlled by the
// Widget, status reported for the current generation; a spec change is applied again; the
// manager's cache holds what the server holds.
func TestReconcileConverges(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if err := e.direct.Create(ctx, newWidget(e.ns, "alpha", map[string]string{"a": "1"}, 2)); err != nil {
		t.Fatal(err)
	}
	w := e.ready(t, "alpha")
	if !controllerutil.ContainsFinalizer(w, widget.Finalizer) {
		t.Errorf("finalizers %v, want %s", w.Finalizers, widget.Finalizer)
	}
	cm, err := e.configMap(t, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["a"] != "1" || len(cm.Data) != 1 {
		t.Errorf("ConfigMap data %v, want a=1", cm.Data)
	}
	controlledBy(t, cm, w)
	if set := managerFields(t, cm, widget.FieldOwner, metav1.ManagedFieldsOperationApply); set == nil {
		t.Errorf("no Apply entry of %s in the ConfigMap's managedFields: %+v", widget.FieldOwner, cm.ManagedFields)
	} else if data, _ := set["f:data"].(map[string]any); data["f:a"] == nil {
		t.Errorf("%s's applied fields %v lack f:data.f:a", widget.FieldOwner, set)
	}
	var dep appsv1.Deployment
	if err := e.direct.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "alpha"}, &dep); err != nil {
		t.Fatal(err)
	}
	controlledBy(t, &dep, w)
	if ptr.Deref(dep.Spec.Replicas, 0) != 2 || dep.Spec.Template.Spec.Containers[0].EnvFrom[0].ConfigMapRef.Name != "alpha-config" {
		t.Errorf("Deployment spec %+v", dep.Spec)
	}
	if managerFields(t, &dep, widget.FieldOwner, metav1.ManagedFieldsOperationApply) == nil {
		t.Errorf("no Apply entry of %s in the Deployment's managedFields", widget.FieldOwner)
	}

	// A spec change: a new generation, applied and observed.
	gen := w.Generation
	w.Spec.Data = map[string]string{"a": "2", "b": "3"}
	w.Spec.Replicas = ptr.To[int32](3)
	if err := e.direct.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	w = e.ready(t, "alpha")
	if w.Generation <= gen {
		t.Errorf("generation %d after a spec change, was %d", w.Generation, gen)
	}
	cm, err = e.configMap(t, "alpha")
	if err != nil || cm.Data["a"] != "2" || cm.Data["b"] != "3" {
		t.Errorf("ConfigMap after the change: %v %v", cm.Data, err)
	}
	if err := e.direct.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "alpha"}, &dep); err != nil || ptr.Deref(dep.Spec.Replicas, 0) != 3 {
		t.Errorf("Deployment replicas after the change: %v %v", dep.Spec.Replicas, err)
	}

	// The manager's cache caught up with the server: same resourceVersions.
	cached := e.mgr.GetClient()
	eventually(t, "the cache holds the server's objects", func() (bool, string) {
		var cw widget.Widget
		var ccm corev1.ConfigMap
		if err := cached.Get(ctx, client.ObjectKeyFromObject(w), &cw); err != nil {
			return false, err.Error()
		}
		if err := cached.Get(ctx, client.ObjectKeyFromObject(cm), &ccm); err != nil {
			return false, err.Error()
		}
		return cw.ResourceVersion == w.ResourceVersion && ccm.ResourceVersion == cm.ResourceVersion,
			fmt.Sprintf("cached widget rv %s (server %s), configmap rv %s (server %s)", cw.ResourceVersion, w.ResourceVersion, ccm.ResourceVersion, cm.ResourceVersion)
	})
	if !e.events.has(fmt.Sprintf("ADD alpha-config %s", cm.UID)) {
		t.Errorf("the manager's informer never delivered the ConfigMap's ADD: %s", e.events)
	}
	// A write that changes nothing is no write (same resourceVersion), so that the reconciler's
	// own unchanged status update does not wake it again, forever.
	before := w.ResourceVersion
	if err := e.direct.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if w.ResourceVersion != before {
		t.Errorf("an unchanged status update moved resourceVersion %s to %s", before, w.ResourceVersion)
	}
	// The recorder's events.k8s.io/v1 Events, one per generation applied (the broadcaster sends
	// them in the background).
	eventually(t, "the Applied events", func() (bool, string) {
		var evs eventsv1.EventList
		if err := e.direct.List(ctx, &evs, client.InNamespace(e.ns)); err != nil {
			return false, err.Error()
		}
		seen := map[string]bool{}
		var all []string
		for _, ev := range evs.Items {
			all = append(all, fmt.Sprintf("%s/%s %s %q by %s", ev.Regarding.Kind, ev.Regarding.Name, ev.Reason, ev.Note, ev.ReportingController))
			if ev.Regarding.Kind == "Widget" && ev.Regarding.Name == "alpha" && ev.Regarding.UID == w.UID &&
				ev.Reason == "Applied" && ev.Action == "Reconcile" && ev.ReportingController == widget.FieldOwner {
				seen[ev.Note] = true
			}
		}
		return seen["applied generation 1"] && seen[fmt.Sprintf("applied generation %d", w.Generation)], strings.Join(all, "; ")
	})
	var list widget.WidgetList
	if err := cached.List(ctx, &list, client.InNamespace(e.ns)); err != nil || len(list.Items) != 1 {
		t.Errorf("cached list of Widgets: %d items, %v", len(list.Items), err)
	}
}

// A deleted ConfigMap comes back: the Owns watch requeues its Widget, which applies it anew.
func TestDeletedConfigMapIsRecreated(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if err := e.direct.Create(ctx, newWidget(e.ns, "beta", map[string]string{"k": "v"}, 1)); err != nil {
		t.Fatal(err)
	}
	w := e.ready(t, "beta")
	old, err := e.configMap(t, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.direct.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	var fresh *corev1.ConfigMap
	eventually(t, "the ConfigMap recreated", func() (bool, string) {
		cm, err := e.configMap(t, "beta")
		if err != nil {
			return false, err.Error()
		}
		fresh = cm
		return cm.UID != old.UID, "uid " + string(cm.UID)
	})
	if fresh.Data["k"] != "v" {
		t.Errorf("recreated ConfigMap data %v", fresh.Data)
	}
	controlledBy(t, fresh, w)
	eventually(t, "the informer saw the delete and the new add", func() (bool, string) {
		return e.events.has(fmt.Sprintf("DELETE beta-config %s", old.UID)) && e.events.has(fmt.Sprintf("ADD beta-config %s", fresh.UID)), e.events.String()
	})
}

// A deleted Deployment comes back too: its Widget is requeued through the metadata-only
// informer (PartialObjectMetadata watch) the controller keeps for Deployments.
func TestDeletedDeploymentIsRecreated(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if err := e.direct.Create(ctx, newWidget(e.ns, "theta", nil, 2)); err != nil {
		t.Fatal(err)
	}
	w := e.ready(t, "theta")
	var old appsv1.Deployment
	if err := e.direct.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "theta"}, &old); err != nil {
		t.Fatal(err)
	}
	if err := e.direct.Delete(ctx, &old); err != nil {
		t.Fatal(err)
	}
	var fresh appsv1.Deployment
	eventually(t, "the Deployment recreated", func() (bool, string) {
		if err := e.direct.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "theta"}, &fresh); err != nil {
			return false, err.Error()
		}
		return fresh.UID != old.UID, "uid " + string(fresh.UID)
	})
	controlledBy(t, &fresh, w)
	if ptr.Deref(fresh.Spec.Replicas, 0) != 2 {
		t.Errorf("recreated Deployment replicas %v", fresh.Spec.Replicas)
	}
	// The manager's cache holds Deployments as metadata only.
	var metas metav1.PartialObjectMetadataList
	metas.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DeploymentList"))
	eventually(t, "the metadata cache holds the new Deployment", func() (bool, string) {
		if err := e.mgr.GetCache().List(ctx, &metas, client.InNamespace(e.ns)); err != nil {
			return false, err.Error()
		}
		for _, m := range metas.Items {
			if m.Name == "theta" && m.UID == fresh.UID {
				return true, ""
			}
		}
		return false, fmt.Sprint(metas.Items)
	})
}

// Another writer's change to an applied field is taken back (the Owns watch requeues, the
// forced apply wins); a field only the other writer set stays, and is still theirs.
func TestChangedConfigMapIsTakenBack(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if err := e.direct.Create(ctx, newWidget(e.ns, "gamma", map[string]string{"a": "1"}, 1)); err != nil {
		t.Fatal(err)
	}
	e.ready(t, "gamma")
	cm, err := e.configMap(t, "gamma")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["a"] = "tampered"
	cm.Data["extra"] = "x"
	if err := e.direct.Update(ctx, cm, client.FieldOwner("someone-else")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a=1 again", func() (bool, string) {
		got, err := e.configMap(t, "gamma")
		if err != nil {
			return false, err.Error()
		}
		cm = got
		return got.Data["a"] == "1", fmt.Sprint(got.Data)
	})
	if cm.Data["extra"] != "x" {
		t.Errorf("the other writer's field went: %v", cm.Data)
	}
	theirs := managerFields(t, cm, "someone-else", metav1.ManagedFieldsOperationUpdate)
	data, _ := theirs["f:data"].(map[string]any)
	if data == nil || data["f:extra"] == nil || data["f:a"] != nil {
		t.Errorf("someone-else's fields %v, want f:data.f:extra and not f:data.f:a", theirs)
	}
}

// A deleted Widget's finalizer runs: its ConfigMap goes, then the Widget. The Deployment stays:
// it goes by its owner reference only through the garbage collector, which fieldstore (like
// kube-apiserver without kube-controller-manager) does not run.
func TestDeletedWidgetIsFinalized(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if err := e.direct.Create(ctx, newWidget(e.ns, "delta", map[string]string{"k": "v"}, 1)); err != nil {
		t.Fatal(err)
	}
	w := e.ready(t, "delta")
	if err := e.direct.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	// The reconciler counts a cleanup once its update that removed the finalizer returned, which
	// may be a moment after the Widget is gone.
	eventually(t, "the Widget gone", func() (bool, string) {
		err := e.direct.Get(ctx, client.ObjectKeyFromObject(w), &widget.Widget{})
		return apierrors.IsNotFound(err) && e.rec.Cleanups.Load() >= 1, fmt.Sprint(err)
	})
	if n := e.rec.Cleanups.Load(); n != 1 {
		t.Errorf("the finalizer ran %d times, want 1", n)
	}
	if _, err := e.configMap(t, "delta"); !apierrors.IsNotFound(err) {
		t.Errorf("the ConfigMap after the finalizer: %v, want NotFound", err)
	}
	var dep appsv1.Deployment
	if err := e.direct.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: "delta"}, &dep); err != nil {
		t.Fatalf("the Deployment after its owner went: %v (no garbage collector runs, so it should stay)", err)
	}
	if ref := metav1.GetControllerOf(&dep); ref == nil || ref.UID != w.UID {
		t.Errorf("the Deployment's controller reference %+v, want the deleted Widget's uid %s", ref, w.UID)
	}
}

// A write that races the reconciler's makes its status update stale: the server answers 409,
// the reconciler returns the error, controller-runtime requeues, and the next pass converges.
func TestConflictIsRequeued(t *testing.T) {
	// The other writer: a client of its own, its result handed over once.
	writer, err := client.New(server(t).Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	raced := make(chan error, 1)
	e := newEnv(t, func(r *widget.Reconciler) {
		r.BeforeStatusUpdate = func(ctx context.Context, w *widget.Widget) {
			once.Do(func() {
				// Another writer changes the Widget after the reconciler read it.
				var other widget.Widget
				if err := writer.Get(ctx, client.ObjectKeyFromObject(w), &other); err != nil {
					raced <- err
					return
				}
				if other.Annotations == nil {
					other.Annotations = map[string]string{}
				}
				other.Annotations["example.fieldstore.io/touched"] = "yes"
				raced <- writer.Update(ctx, &other)
			})
		}
	})
	ctx := context.Background()
	if err := e.direct.Create(ctx, newWidget(e.ns, "epsilon", map[string]string{"k": "v"}, 1)); err != nil {
		t.Fatal(err)
	}
	w := e.ready(t, "epsilon")
	select {
	case err := <-raced:
		if err != nil {
			t.Fatalf("the racing write: %v", err)
		}
	default:
		t.Fatal("the reconciler never reached its status update")
	}
	if n := e.rec.Conflicts.Load(); n < 1 {
		t.Errorf("the reconciler saw %d conflicts, want at least 1", n)
	}
	if w.Annotations["example.fieldstore.io/touched"] != "yes" {
		t.Errorf("the racing write's annotation is lost: %v", w.Annotations)
	}
	if n := e.rec.Reconciles.Load(); n < 2 {
		t.Errorf("%d reconciles, want a retry after the conflict", n)
	}
}

// A stale write is refused with the Status kube-apiserver sends: 409, reason Conflict, the
// object's group, kind and name in details.
func TestStaleStatusUpdateIsConflict(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if err := e.direct.Create(ctx, newWidget(e.ns, "zeta", nil, 0)); err != nil {
		t.Fatal(err)
	}
	w := e.ready(t, "zeta")
	stale := w.DeepCopy()
	// The reconciler may write too: retry until this write lands, then write the stale copy.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.direct.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		w.Status.Phase = "Fresh"
		return e.direct.Status().Update(ctx, w)
	}); err != nil {
		t.Fatal(err)
	}
	stale.Status.Phase = "Stale"
	err := e.direct.Status().Update(ctx, stale)
	var status apierrors.APIStatus
	if !apierrors.IsConflict(err) || !errors.As(err, &status) {
		t.Fatalf("stale status update: %v, want 409 Conflict", err)
	}
	d := status.Status().Details
	if d == nil || d.Group != "example.fieldstore.io" || d.Kind != "widgets" || d.Name != "zeta" {
		t.Errorf("conflict details %+v, want group example.fieldstore.io, kind widgets, name zeta", d)
	}
}

// Status by Server-Side Apply (the status subresource's apply client, an unstructured apply
// configuration): the server records the manager's fields under subresource "status". And a
// merge patch with an optimistic lock from a stale copy is a 409.
func TestStatusApplyAndOptimisticLock(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	if err := e.direct.Create(ctx, newWidget(e.ns, "eta", map[string]string{"k": "v"}, 1)); err != nil {
		t.Fatal(err)
	}
	w := e.ready(t, "eta")
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.fieldstore.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "eta", "namespace": e.ns},
		"status":   map[string]any{"deploymentName": "applied-by-test"},
	}}
	if err := e.direct.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("status-writer"), client.ForceOwnership); err != nil {
		t.Fatalf("status apply: %v", err)
	}
	var got widget.Widget
	if err := e.direct.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	var entry *metav1.ManagedFieldsEntry
	for i, mf := range got.ManagedFields {
		if mf.Manager == "status-writer" {
			entry = &got.ManagedFields[i]
		}
	}
	if entry == nil || entry.Operation != metav1.ManagedFieldsOperationApply || entry.Subresource != "status" {
		t.Fatalf("status-writer's managedFields entry %+v, want an Apply on subresource status", entry)
	}
	if !strings.Contains(string(entry.FieldsV1.Raw), `"f:deploymentName"`) {
		t.Errorf("status-writer's fields %s lack f:status.f:deploymentName", entry.FieldsV1.Raw)
	}

	stale := got.DeepCopy()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cur widget.Widget
		if err := e.direct.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
			return err
		}
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		cur.Labels["moved"] = "on"
		return e.direct.Update(ctx, &cur)
	}); err != nil {
		t.Fatal(err)
	}
	patched := stale.DeepCopy()
	patched.Labels = map[string]string{"from": "stale"}
	err := e.direct.Patch(ctx, patched, client.MergeFromWithOptions(stale, client.MergeFromWithOptimisticLock{}))
	if !apierrors.IsConflict(err) {
		t.Errorf("merge patch with a stale resourceVersion: %v, want 409 Conflict", err)
	}
}

// A client configured for protobuf, as operators set it for built-in kinds: its deletes of
// Widgets carry protobuf DeleteOptions in the Widget's group version, which the server decodes
// (kube-apiserver registers the options in every group version); the finalizer still runs.
func TestProtobufClientDeletesWidgets(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	cfg := rest.CopyConfig(server(t).Config)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	pc, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// Built-in kinds travel as protobuf both ways.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "by-protobuf"}, Data: map[string]string{"k": "v"}}
	if err := pc.Create(ctx, cm); err != nil || cm.UID == "" {
		t.Fatalf("protobuf create: %v (uid %q)", err, cm.UID)
	}
	for _, name := range []string{"iota", "kappa", "lambda"} {
		if err := e.direct.Create(ctx, newWidget(e.ns, name, nil, 1)); err != nil {
			t.Fatal(err)
		}
	}
	iota := e.ready(t, "iota")
	e.ready(t, "kappa")
	e.ready(t, "lambda")
	if err := pc.Delete(ctx, iota, client.Preconditions{UID: &iota.UID}); err != nil {
		t.Fatalf("protobuf delete of a Widget: %v", err)
	}
	if err := pc.DeleteAllOf(ctx, &widget.Widget{}, client.InNamespace(e.ns), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatalf("protobuf deletecollection of Widgets: %v", err)
	}
	eventually(t, "the Widgets finalized and gone", func() (bool, string) {
		var left widget.WidgetList
		if err := e.direct.List(ctx, &left, client.InNamespace(e.ns)); err != nil {
			return false, err.Error()
		}
		return len(left.Items) == 0 && e.rec.Cleanups.Load() >= 3, fmt.Sprintf("%d left, %d cleanups", len(left.Items), e.rec.Cleanups.Load())
	})
	if n := e.rec.Cleanups.Load(); n != 3 {
		t.Errorf("the finalizer ran %d times, want 3", n)
	}
}
