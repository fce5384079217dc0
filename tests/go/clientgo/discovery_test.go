package clientgo

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// TestDiscoveryAndRESTMapper asks discovery for every group and resource — client-go takes
// aggregated discovery (apidiscovery.k8s.io/v2) from /api and /apis in two requests, no
// per-group-version fetch — then maps kinds with a deferred RESTMapper over a memory cache; a
// CRD's kind is unknown until it is registered and the mapper Reset.
func TestDiscoveryAndRESTMapper(t *testing.T) {
	srv := startServer(t)
	cfg, rec := srv.config(t, "")
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)

	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, g := range groups {
		names[g.Name] = true
	}
	for _, g := range []string{"", "apps", "batch", "coordination.k8s.io", "apiextensions.k8s.io", "rbac.authorization.k8s.io"} {
		if !names[g] {
			t.Fatalf("group %q missing from discovery: %v", g, names)
		}
	}
	found := func(gv, resource string, verbs ...string) bool {
		for _, l := range resources {
			if l.GroupVersion != gv {
				continue
			}
			for _, r := range l.APIResources {
				if r.Name == resource && r.Namespaced == (resource != "namespaces") {
					for _, v := range verbs {
						if !slices.Contains(r.Verbs, v) {
							return false
						}
					}
					return true
				}
			}
		}
		return false
	}
	if !found("apps/v1", "deployments", "list", "watch", "patch") || !found("apps/v1", "deployments/scale", "get", "update") ||
		!found("apps/v1", "deployments/status", "get", "update") || !found("coordination.k8s.io/v1", "leases", "create") ||
		!found("v1", "namespaces", "get") {
		t.Fatalf("resources missing from discovery: %v", resources)
	}

	// Aggregated: /api and /apis answered apidiscovery.k8s.io/v2, and nothing else was asked.
	for _, path := range []string{"/api", "/apis"} {
		got := rec.matching("GET", path)
		var hit *exchange
		for i, e := range got {
			if p, _, _ := strings.Cut(e.URL, "?"); p == path {
				hit = &got[i]
			}
		}
		if hit == nil || !strings.Contains(hit.Accept, discovery.AcceptV2) {
			t.Fatalf("GET %s with aggregated discovery's Accept: %+v", path, got)
		}
		if !strings.Contains(hit.RespContentType, "g=apidiscovery.k8s.io") || !strings.Contains(hit.RespContentType, "v=v2") ||
			!strings.Contains(hit.RespContentType, "as=APIGroupDiscoveryList") {
			t.Fatalf("GET %s answered %q, not aggregated discovery v2", path, hit.RespContentType)
		}
	}
	if legacy := rec.matching("GET", "/apis/apps/v1"); len(legacy) != 0 {
		t.Fatalf("client-go fell back to per-group discovery: %+v", legacy)
	}

	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	m, err := mapper.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if m.Resource != (schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}) || m.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Fatalf("Deployment mapped to %+v", m)
	}
	kinds, err := mapper.KindsFor(schema.GroupVersionResource{Resource: "leases"})
	if err != nil || len(kinds) != 1 || kinds[0] != (schema.GroupVersionKind{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"}) {
		t.Fatalf("leases mapped to %v (%v)", kinds, err)
	}
	ns, err := mapper.RESTMapping(schema.GroupKind{Kind: "Namespace"})
	if err != nil || ns.Scope.Name() != meta.RESTScopeNameRoot {
		t.Fatalf("Namespace mapped to %+v (%v)", ns, err)
	}
	short, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: "deployment"})
	if err != nil || short.Resource != "deployments" || short.Group != "apps" {
		t.Fatalf("the singular deployment mapped to %v (%v)", short, err)
	}

	widgetKind := schema.GroupKind{Group: "example.fieldstore.io", Kind: "Widget"}
	if _, err := mapper.RESTMapping(widgetKind); !meta.IsNoMatchError(err) {
		t.Fatalf("an unregistered kind mapped: %v", err)
	}
	registerWidgets(t, cfg)
	before := len(rec.matching("GET", "/apis?"))
	mapper.Reset()
	w, err := mapper.RESTMapping(widgetKind)
	if err != nil {
		t.Fatalf("the Widget kind after its CRD and a Reset: %v", err)
	}
	if w.Resource != widgetGVR || w.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Fatalf("Widget mapped to %+v", w)
	}
	if len(rec.matching("GET", "/apis?")) == before {
		t.Fatal("the mapper found the new kind without asking discovery again")
	}
	widgets, err := dc.ServerResourcesForGroupVersion("example.fieldstore.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var sub []string
	for _, r := range widgets.APIResources {
		sub = append(sub, r.Name)
	}
	if !slices.Contains(sub, "widgets") || !slices.Contains(sub, "widgets/status") {
		t.Fatalf("the Widget group version serves %v", sub)
	}
}
