package clientgo

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
)

// TestFilteredInformer runs an informer on one namespace and a label selector, watch-list on and
// off: it holds the matching objects only; an object relabelled out of the selector is a delete
// to it, one relabelled into it an add — as kube-apiserver's filtered watches send them.
func TestFilteredInformer(t *testing.T) {
	for _, mode := range watchListModes {
		t.Run(mode.name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, mode.on)
			srv := startServer(t)
			cfg, _ := srv.config(t, protobuf)
			informerCfg, rec := srv.config(t, protobuf)
			client := kubernetes.NewForConfigOrDie(cfg)
			ctx := t.Context()
			if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, ns := range []string{"default", "team-a"} {
				for i, tier := range []string{"gold", "silver", "gold"} {
					cm := configMap(ns, fmt.Sprintf("cm-%d", i), nil)
					cm.Labels["tier"] = tier
					if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
			}

			factory := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(informerCfg), 0, informers.WithNamespace("team-a"),
				informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "tier=gold" }))
			cms := factory.Core().V1().ConfigMaps()
			seen := newObserver()
			reg, err := cms.Informer().AddEventHandler(seen.handler())
			if err != nil {
				t.Fatal(err)
			}
			factory.Start(ctx.Done())
			t.Cleanup(factory.Shutdown)
			if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
				t.Fatal("the informer never synced")
			}
			listGold := func() (map[string]string, error) {
				l, err := client.CoreV1().ConfigMaps("team-a").List(ctx, metav1.ListOptions{LabelSelector: "tier=gold"})
				if err != nil {
					return nil, err
				}
				return namesAndVersions(l.Items), nil
			}
			if got, _ := (cmLister{cms.Lister()}).versions(); len(got) != 2 {
				t.Fatalf("the filtered informer holds %v, want team-a's two gold ConfigMaps", got)
			}
			assertListerMatchesList(t, cmLister{cms.Lister()}, listGold)

			relabel := func(name, tier string) {
				cm, err := client.CoreV1().ConfigMaps("team-a").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cm.Labels["tier"] = tier
				if _, err := client.CoreV1().ConfigMaps("team-a").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			relabel("cm-0", "bronze") // out of the selector
			relabel("cm-1", "gold")   // into it
			// Elsewhere: another namespace, another tier.
			relabel2 := configMap("default", "cm-9", nil)
			relabel2.Labels["tier"] = "gold"
			if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, relabel2, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := client.CoreV1().ConfigMaps("team-a").Create(ctx, configMap("team-a", "plain", nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "delete team-a/cm-0 (relabelled out)", func() bool { return seen.saw("delete team-a/cm-0") })
			eventually(t, "add team-a/cm-1 (relabelled in)", func() bool { return seen.saw("add team-a/cm-1") })
			assertListerMatchesList(t, cmLister{cms.Lister()}, listGold)
			if seen.saw("add default/cm-9") || seen.saw("add team-a/plain") || seen.saw("add default/cm-0") {
				t.Fatalf("the informer was told of objects outside its namespace or selector: %v", seen.events)
			}
			for _, e := range rec.matching("GET", "/api/v1/namespaces/team-a/configmaps?", "labelSelector=tier%3Dgold") {
				if e.Status != 200 {
					t.Fatalf("%s answered %d", e.URL, e.Status)
				}
			}
			checkListPath(t, rec, "/api/v1/namespaces/team-a/configmaps", mode.on)
		})
	}
}

// TestPagerSnapshot lists 50 ConfigMaps 7 at a time with client-go's pager (limit and continue):
// every page comes from the first one's snapshot (its resourceVersion), so a ConfigMap created
// between pages is not in the listing, and the listing equals a full LIST at that version.
func TestPagerSnapshot(t *testing.T) {
	srv := startServer(t)
	cfg, rec := srv.config(t, protobuf)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	cms := client.CoreV1().ConfigMaps("default")
	for i := range 50 {
		if _, err := cms.Create(ctx, configMap("default", fmt.Sprintf("cm-%02d", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	pages, versions := 0, map[string]bool{}
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		if pages == 1 {
			if _, err := cms.Create(ctx, configMap("default", "cm-between-pages", nil), metav1.CreateOptions{}); err != nil {
				return nil, err
			}
		}
		pages++
		l, err := cms.List(ctx, opts)
		if err == nil {
			versions[l.ResourceVersion] = true
		}
		return l, err
	}))
	p.PageSize = 7
	var names []string
	err = p.EachListItem(context.WithoutCancel(ctx), metav1.ListOptions{}, func(obj runtime.Object) error {
		names = append(names, obj.(*corev1.ConfigMap).Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages != 8 || len(versions) != 1 || !versions[before.ResourceVersion] {
		t.Fatalf("%d pages at resourceVersions %v; want 8 at %s", pages, versions, before.ResourceVersion)
	}
	want := namesAndVersions(before.Items)
	if len(names) != len(want) {
		t.Fatalf("the pager listed %d ConfigMaps, want %d: %v", len(names), len(want), names)
	}
	for i, n := range names {
		if _, ok := want["default/"+n]; !ok || (i > 0 && names[i-1] >= n) {
			t.Fatalf("the pager's listing is not the snapshot in name order: %v", names)
		}
	}
	if len(rec.matching("GET", "/api/v1/namespaces/default/configmaps?", "continue=")) != 7 {
		t.Fatalf("want 7 continued pages: %+v", rec.matching("GET", "continue="))
	}
}
