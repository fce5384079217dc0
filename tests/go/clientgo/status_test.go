package clientgo

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// TestDeploymentStatus writes a Deployment's status as its controller does — UpdateStatus, then
// ApplyStatus — and its spec as a user does: each door changes only its half, and the generation
// moves as kube-apiserver's Deployment strategy moves it (spec and annotation changes, not status
// or label changes).
func TestDeploymentStatus(t *testing.T) {
	srv := startServer(t)
	cfg, _ := srv.config(t, protobuf)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	deps := client.AppsV1().Deployments("default")

	d, err := deps.Create(ctx, deployment("web", 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Generation != 1 {
		t.Fatalf("a new Deployment has generation %d, want 1", d.Generation)
	}

	// The status door: status changes, a spec change in the same body is ignored.
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, ReadyReplicas: 1, UpdatedReplicas: 3}
	d.Spec.Replicas = ptrTo(int32(9))
	d, err = deps.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 3 || d.Status.ReadyReplicas != 1 || d.Status.ObservedGeneration != 1 || d.Generation != 1 {
		t.Fatalf("after UpdateStatus: replicas %d, status %+v, generation %d", *d.Spec.Replicas, d.Status, d.Generation)
	}

	// The main door: the spec changes and the generation with it, a status change is ignored.
	d.Spec.Replicas = ptrTo(int32(4))
	d.Status.ReadyReplicas = 99
	d, err = deps.Update(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 4 || d.Status.ReadyReplicas != 1 || d.Generation != 2 {
		t.Fatalf("after Update: replicas %d, readyReplicas %d, generation %d", *d.Spec.Replicas, d.Status.ReadyReplicas, d.Generation)
	}

	// A label is metadata only; an annotation bumps a Deployment's generation (kube-apiserver's
	// strategy: annotations are copied to its ReplicaSets).
	d.Labels = map[string]string{"team": "web"}
	if d, err = deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil || d.Generation != 2 {
		t.Fatalf("after a label change: generation %d (%v), want 2", d.Generation, err)
	}
	d.Annotations = map[string]string{"note": "rolled"}
	if d, err = deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil || d.Generation != 3 {
		t.Fatalf("after an annotation change: generation %d (%v), want 3", d.Generation, err)
	}

	// ApplyStatus as a controller: its own manager on the status subresource.
	st := appsv1ac.Deployment("web", "default").WithStatus(appsv1ac.DeploymentStatus().
		WithObservedGeneration(3).WithReplicas(4).WithReadyReplicas(4).WithAvailableReplicas(4))
	d, err = deps.ApplyStatus(ctx, st, metav1.ApplyOptions{FieldManager: "deployment-controller", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.ReadyReplicas != 4 || d.Status.ObservedGeneration != 3 || *d.Spec.Replicas != 4 || d.Generation != 3 {
		t.Fatalf("after ApplyStatus: status %+v, replicas %d, generation %d", d.Status, *d.Spec.Replicas, d.Generation)
	}
	var entry *metav1.ManagedFieldsEntry
	for i, e := range d.ManagedFields {
		if e.Manager == "deployment-controller" {
			entry = &d.ManagedFields[i]
		}
	}
	if entry == nil || entry.Subresource != "status" || entry.Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("the controller's managedFields entry: %+v", d.ManagedFields)
	}
	owned, err := appsv1ac.ExtractDeploymentStatus(d, "deployment-controller")
	if err != nil {
		t.Fatal(err)
	}
	if owned.Status == nil || *owned.Status.ReadyReplicas != 4 || owned.Spec != nil {
		t.Fatalf("what the controller owns: %+v", owned)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestCustomResourceStatus does the same on a custom resource with a status subresource, through
// the dynamic client: spec through the main door (generation bumps), status through its own
// (generation kept), metadata changes without a bump.
func TestCustomResourceStatus(t *testing.T) {
	srv := startServer(t)
	cfg, _ := srv.config(t, "")
	registerWidgets(t, cfg)
	widgets := dynamic.NewForConfigOrDie(cfg).Resource(widgetGVR).Namespace("default")
	ctx := t.Context()

	w, err := widgets.Create(ctx, widget("gear", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w.GetGeneration() != 1 {
		t.Fatalf("a new Widget has generation %d", w.GetGeneration())
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(unstructured.SetNestedField(w.Object, map[string]any{"ready": true, "observedGeneration": int64(1)}, "status"))
	must(unstructured.SetNestedField(w.Object, int64(50), "spec", "size"))
	w, err = widgets.UpdateStatus(ctx, w, metav1.UpdateOptions{})
	must(err)
	size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
	ready, _, _ := unstructured.NestedBool(w.Object, "status", "ready")
	if size != 1 || !ready || w.GetGeneration() != 1 {
		t.Fatalf("after UpdateStatus: size %d, ready %v, generation %d", size, ready, w.GetGeneration())
	}

	must(unstructured.SetNestedField(w.Object, int64(2), "spec", "size"))
	must(unstructured.SetNestedField(w.Object, false, "status", "ready"))
	w, err = widgets.Update(ctx, w, metav1.UpdateOptions{})
	must(err)
	size, _, _ = unstructured.NestedInt64(w.Object, "spec", "size")
	ready, _, _ = unstructured.NestedBool(w.Object, "status", "ready")
	if size != 2 || !ready || w.GetGeneration() != 2 {
		t.Fatalf("after Update: size %d, ready %v, generation %d", size, ready, w.GetGeneration())
	}

	w.SetAnnotations(map[string]string{"note": "x"})
	w.SetLabels(map[string]string{"tier": "gold"})
	w, err = widgets.Update(ctx, w, metav1.UpdateOptions{})
	must(err)
	if w.GetGeneration() != 2 {
		t.Fatalf("a metadata change moved a custom resource's generation to %d", w.GetGeneration())
	}

	// Apply to the status subresource through the dynamic client: the field is the UpdateStatus
	// caller's (client-go's user agent is its manager), on the status subresource; then forced.
	status := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.fieldstore.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "gear", "namespace": "default"},
		"status":   map[string]any{"observedGeneration": int64(2)},
	}}
	_, err = widgets.ApplyStatus(ctx, "gear", status, metav1.ApplyOptions{FieldManager: "widget-controller"})
	if c := conflictCause(t, err, ".status.observedGeneration"); !strings.Contains(c.Message, `conflict with "fieldstore-clientgo-test" with subresource "status"`) {
		t.Fatalf("the conflict's cause: %+v", c)
	}
	applied, err := widgets.ApplyStatus(ctx, "gear", status, metav1.ApplyOptions{FieldManager: "widget-controller", Force: true})
	must(err)
	og, _, _ := unstructured.NestedInt64(applied.Object, "status", "observedGeneration")
	if og != 2 || applied.GetGeneration() != 2 {
		t.Fatalf("after ApplyStatus: observedGeneration %d, generation %d", og, applied.GetGeneration())
	}
}
