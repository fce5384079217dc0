package envtest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"fieldstore.io/tests/controllers/widget"
)

func ctxBackground() context.Context { return context.Background() }

// envtest.Start returned only once discovery served both CRDs; the client's RESTMapper maps
// their kinds, the status subresource included.
func TestCRDsAreServed(t *testing.T) {
	skipUnlessReady(t)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, gv := range []string{"example.fieldstore.io/v1", "example.fieldstore.io/v1alpha1"} {
		list, err := dc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("discovery of %s: %v", gv, err)
		}
		for _, r := range list.APIResources {
			served[gv+" "+r.Name] = true
		}
	}
	for _, want := range []string{"example.fieldstore.io/v1 widgets", "example.fieldstore.io/v1 widgets/status", "example.fieldstore.io/v1alpha1 gadgets"} {
		if !served[want] {
			t.Errorf("discovery lacks %s: %v", want, served)
		}
	}
	mapping, err := k8sClient.RESTMapper().RESTMapping(schema.GroupKind{Group: "example.fieldstore.io", Kind: "Gadget"})
	if err != nil {
		t.Fatal(err)
	}
	if mapping.Resource.Resource != "gadgets" || mapping.Scope.Name() != "root" {
		t.Errorf("Gadget maps to %v (%s), want gadgets, cluster-scoped", mapping.Resource, mapping.Scope.Name())
	}
	g := &unstructured.Unstructured{}
	g.SetAPIVersion("example.fieldstore.io/v1alpha1")
	g.SetKind("Gadget")
	g.SetName("g1")
	g.Object["spec"] = map[string]any{"anything": "goes"}
	if err := k8sClient.Create(ctxBackground(), g); err != nil {
		t.Fatalf("create Gadget: %v", err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(ctxBackground(), g) })
}

// The operator's controller, started the way a kubebuilder suite starts it on envtest's config,
// reconciles a Widget to Ready with its ConfigMap.
func TestControllerOnEnvtest(t *testing.T) {
	skipUnlessReady(t)
	ctx, cancel := context.WithCancel(context.Background())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "envtest-"}}
	if err := k8sClient.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		// As a deployed operator runs: leader election on a Lease.
		LeaderElection:          true,
		LeaderElectionID:        "widget-operator",
		LeaderElectionNamespace: ns.Name,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&widget.Reconciler{Client: mgr.GetClient(), Scheme: scheme}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	select {
	case <-mgr.Elected():
	case <-time.After(20 * time.Second):
		t.Fatal("the manager was not elected leader within 20 s")
	}
	var lease coordinationv1.Lease
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "widget-operator"}, &lease); err != nil {
		t.Fatalf("the leader election Lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("the Lease has no holder: %+v", lease.Spec)
	}
	w := &widget.Widget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "w"},
		Spec:       widget.WidgetSpec{Data: map[string]string{"greeting": "hello"}, Replicas: ptr.To[int32](1)},
	}
	if err := k8sClient.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var got widget.Widget
		var cm corev1.ConfigMap
		errW := k8sClient.Get(ctx, client.ObjectKeyFromObject(w), &got)
		errC := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: widget.ConfigMapName(w)}, &cm)
		if errW == nil && errC == nil && got.Status.Phase == "Ready" && got.Status.ObservedGeneration == got.Generation && cm.Data["greeting"] == "hello" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not Ready within 20 s: widget %+v (%v), configmap %v (%v)", got.Status, errW, cm.Data, errC)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The suite's own teardown deletes what it made; the finalizer has to run for it to go.
	if err := k8sClient.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	for {
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(w), &widget.Widget{})
		if client.IgnoreNotFound(err) == nil && err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Widget was not finalized: %v", fmt.Sprint(err))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
