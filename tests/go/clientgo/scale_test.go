package clientgo

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
)

// TestScaleClient scales a Deployment and a custom resource with client-go's polymorphic scale
// client (what the HorizontalPodAutoscaler and `kubectl scale` use): it finds each `scale`
// subresource through discovery, reads the Scale and writes it; for the custom resource the CRD's
// specReplicasPath, statusReplicasPath and labelSelectorPath are what the Scale shows and sets.
func TestScaleClient(t *testing.T) {
	srv := startServer(t)
	cfg, _ := srv.config(t, "")
	registerWidgets(t, cfg)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	if _, err := client.AppsV1().Deployments("default").Create(ctx, deployment("web", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	widgets := dynamic.NewForConfigOrDie(cfg).Resource(widgetGVR).Namespace("default")
	if _, err := widgets.Create(ctx, widget("gear", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := widgets.Get(ctx, "gear", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedMap(w.Object, map[string]any{"replicas": int64(1), "selector": "app=gear"}, "status"); err != nil {
		t.Fatal(err)
	}
	if _, err := widgets.UpdateStatus(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	scales, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(dc))
	if err != nil {
		t.Fatal(err)
	}
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	for _, c := range []struct {
		gr             schema.GroupResource
		name           string
		replicas, seen int32
		selector       string
	}{
		{deployments, "web", 2, 0, "app=web"},
		{widgetGVR.GroupResource(), "gear", 3, 1, "app=gear"},
	} {
		s, err := scales.Scales("default").Get(ctx, c.gr, c.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the Scale of %s %s: %v", c.gr, c.name, err)
		}
		if s.Spec.Replicas != c.replicas || s.Status.Replicas != c.seen || s.Status.Selector != c.selector {
			t.Fatalf("the Scale of %s %s: %+v", c.gr, c.name, s)
		}
		s.Spec.Replicas = 5
		updated, err := scales.Scales("default").Update(ctx, c.gr, s, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("scaling %s %s: %v", c.gr, c.name, err)
		}
		if updated.Spec.Replicas != 5 || updated.ResourceVersion == s.ResourceVersion {
			t.Fatalf("the Scale after the update: %+v", updated)
		}
	}
	d, err := client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 5 {
		t.Fatalf("the Deployment after the scale: %v (%v)", d, err)
	}
	w, err = widgets.Get(ctx, "gear", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
	if size != 5 || w.GetGeneration() != 2 {
		t.Fatalf("the Widget after the scale: size %d, generation %d", size, w.GetGeneration())
	}
}
