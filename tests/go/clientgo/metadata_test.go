package clientgo

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestMetadataInformer runs metadata-only informers (what the garbage collector, quota and
// controller-runtime's OnlyMetadata use) on ConfigMaps and on a custom resource, watch-list on
// and off: the caches hold PartialObjectMetadata — names, labels, resourceVersions, no data —
// and follow label changes and deletes; every list and watch asked for PartialObjectMetadata(List)
// and got it.
func TestMetadataInformer(t *testing.T) {
	for _, mode := range watchListModes {
		t.Run(mode.name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, mode.on)
			srv := startServer(t)
			cfg, _ := srv.config(t, "")
			informerCfg, rec := srv.config(t, "")
			registerWidgets(t, cfg)
			client := kubernetes.NewForConfigOrDie(cfg)
			widgets := dynamic.NewForConfigOrDie(cfg).Resource(widgetGVR).Namespace("default")
			ctx := t.Context()
			for i := range 3 {
				if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", fmt.Sprintf("cm-%d", i), map[string]string{"secret-ish": "not in metadata"}), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				if _, err := widgets.Create(ctx, widget(fmt.Sprintf("w-%d", i), 1), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}

			mc := metadata.NewForConfigOrDie(informerCfg)
			factory := metadatainformer.NewSharedInformerFactory(mc, 0)
			cmInf, wInf := factory.ForResource(configMapsGVR), factory.ForResource(widgetGVR)
			cmSeen, wSeen := newObserver(), newObserver()
			cmReg, err := cmInf.Informer().AddEventHandler(cmSeen.handler())
			if err != nil {
				t.Fatal(err)
			}
			wReg, err := wInf.Informer().AddEventHandler(wSeen.handler())
			if err != nil {
				t.Fatal(err)
			}
			factory.Start(ctx.Done())
			t.Cleanup(factory.Shutdown)
			if !cache.WaitForCacheSync(ctx.Done(), cmReg.HasSynced, wReg.HasSynced) {
				t.Fatal("the metadata informers never synced")
			}

			obj, err := cmInf.Lister().ByNamespace("default").Get("cm-1")
			if err != nil {
				t.Fatal(err)
			}
			pom, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				t.Fatalf("the metadata lister holds %T, want *PartialObjectMetadata", obj)
			}
			if pom.Labels["app"] != "informers" || pom.ResourceVersion == "" || pom.UID == "" {
				t.Fatalf("cm-1's metadata: %+v", pom.ObjectMeta)
			}

			// A label change and a delete, seen through the metadata watch.
			cm, err := client.CoreV1().ConfigMaps("default").Get(ctx, "cm-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cm.Labels["tier"] = "gold"
			if _, err := client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := widgets.Delete(ctx, "w-2", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			w0, err := widgets.Get(ctx, "w-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w0.SetAnnotations(map[string]string{"note": "hello"})
			if _, err := widgets.Update(ctx, w0, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "cm-0 labelled tier=gold", func() bool {
				p, _ := cmSeen.object("default/cm-0").(*metav1.PartialObjectMetadata)
				return p != nil && p.Labels["tier"] == "gold"
			})
			eventually(t, "delete default/w-2", func() bool { return wSeen.saw("delete default/w-2") })
			eventually(t, "w-0 annotated", func() bool {
				p, _ := wSeen.object("default/w-0").(*metav1.PartialObjectMetadata)
				return p != nil && p.Annotations["note"] == "hello"
			})
			for _, l := range []struct {
				lister cache.GenericLister
				list   func() (map[string]string, error)
			}{
				{cmInf.Lister(), func() (map[string]string, error) {
					l, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
					if err != nil {
						return nil, err
					}
					return namesAndVersions(l.Items), nil
				}},
				{wInf.Lister(), func() (map[string]string, error) {
					l, err := widgets.List(ctx, metav1.ListOptions{})
					if err != nil {
						return nil, err
					}
					return namesAndVersions(l.Items), nil
				}},
			} {
				assertListerMatchesList(t, genericLister{l.lister}, l.list)
			}

			// How it was fetched: metadata only, every time, and nothing refused.
			for _, path := range []string{"/api/v1/configmaps", "/apis/example.fieldstore.io/v1/widgets"} {
				checkListPath(t, rec, path, mode.on)
				for _, e := range rec.matching("GET", path+"?") {
					want := "as=PartialObjectMetadata;"
					if isList(e) {
						want = "as=PartialObjectMetadataList;"
					}
					if !strings.Contains(e.Accept, want) {
						t.Fatalf("%s asked for %q, want %s", e.URL, e.Accept, want)
					}
					if e.Status != 200 {
						t.Fatalf("%s (Accept %s) answered %d", e.URL, e.Accept, e.Status)
					}
				}
			}
		})
	}
}
