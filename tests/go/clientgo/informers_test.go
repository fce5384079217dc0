package clientgo

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// observer records what an informer's event handlers were told, in order.
type observer struct {
	mu     sync.Mutex
	events []string // "add ns/name", "update ns/name", "delete ns/name"
	last   map[string]any
}

func newObserver() *observer { return &observer{last: map[string]any{}} }

func (o *observer) record(verb string, obj any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	name := nameOf(obj)
	o.events = append(o.events, verb+" "+name)
	if verb == "delete" {
		delete(o.last, name)
	} else {
		o.last[name] = obj
	}
}

func (o *observer) handler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.record("add", obj) },
		UpdateFunc: func(_, obj any) { o.record("update", obj) },
		DeleteFunc: func(obj any) { o.record("delete", obj) },
	}
}

func (o *observer) saw(event string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.events, event)
}

func (o *observer) object(name string) any {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last[name]
}

// watchListModes are the two ways a reflector fills its store: streaming the initial state on
// a watch (client-go's default since 0.35) or a LIST then a watch from its resourceVersion.
var watchListModes = []struct {
	name string
	on   bool
}{{"watchlist", true}, {"list-then-watch", false}}

// checkListPath asserts that the reflector of resource (a URL path such as /api/v1/configmaps)
// filled its store the way the WatchListClient gate says: a watch-list request and no LIST when
// on; a LIST then a watch from a resourceVersion, never sendInitialEvents, when off.
func checkListPath(t *testing.T, rec *recorder, path string, watchList bool) {
	t.Helper()
	var lists, watchLists, watches []exchange
	for _, e := range rec.matching("GET", path+"?") {
		switch {
		case isWatchList(e):
			watchLists = append(watchLists, e)
		case isList(e):
			lists = append(lists, e)
		default:
			watches = append(watches, e)
		}
	}
	if watchList {
		if len(watchLists) == 0 || len(lists) != 0 {
			t.Fatalf("%s with watch-list on: want a watch-list request and no LIST, got watch-lists %v, lists %v", path, watchLists, lists)
		}
		for _, e := range watchLists {
			if e.Status != 200 {
				t.Fatalf("%s: watch-list answered %d", path, e.Status)
			}
		}
		return
	}
	if len(lists) == 0 || len(watchLists) != 0 || len(watches) == 0 {
		t.Fatalf("%s with watch-list off: want a LIST and a watch, no watch-list; got lists %v, watch-lists %v, watches %v", path, lists, watchLists, watches)
	}
	for _, w := range watches {
		if !strings.Contains(w.URL, "resourceVersion=") || strings.Contains(w.URL, "sendInitialEvents") {
			t.Fatalf("%s: the watch after a LIST should resume from its resourceVersion: %s", path, w.URL)
		}
	}
}

// TestSharedInformerFactoryBuiltins runs a shared informer factory on ConfigMaps and Deployments,
// JSON and protobuf, watch-list on and off: the caches fill with what was there, then follow
// creates, updates and deletes, and the listers agree with a fresh LIST.
func TestSharedInformerFactoryBuiltins(t *testing.T) {
	for _, mode := range watchListModes {
		for _, ct := range []string{jsonCT, protobuf} {
			name := mode.name + "/" + strings.TrimPrefix(strings.TrimPrefix(ct, "application/"), "vnd.kubernetes.")
			t.Run(name, func(t *testing.T) {
				clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, mode.on)
				testBuiltinInformers(t, ct, mode.on)
			})
		}
	}
}

func configMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": "informers"}},
		Data:       data,
	}
}

func deployment(name string, replicas int32) *appsv1.Deployment {
	sel := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}
}

func testBuiltinInformers(t *testing.T, ct string, watchList bool) {
	srv := startServer(t)
	// The informers' requests are recorded apart from the test's own.
	cfg, _ := srv.config(t, ct)
	informerCfg, rec := srv.config(t, ct)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()

	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		for _, ns := range []string{"default", "team-a"} {
			if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, configMap(ns, fmt.Sprintf("cm-%d", i), map[string]string{"i": fmt.Sprint(i)}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 2 {
		if _, err := client.AppsV1().Deployments("default").Create(ctx, deployment(fmt.Sprintf("web-%d", i), 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	factory := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(informerCfg), 0)
	cms, deps := factory.Core().V1().ConfigMaps(), factory.Apps().V1().Deployments()
	cmSeen, depSeen := newObserver(), newObserver()
	cmReg, err := cms.Informer().AddEventHandler(cmSeen.handler())
	if err != nil {
		t.Fatal(err)
	}
	depReg, err := deps.Informer().AddEventHandler(depSeen.handler())
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(factory.Shutdown)
	// Synced handlers: the informers' stores are filled and every handler told of their content.
	if !cache.WaitForCacheSync(ctx.Done(), cmReg.HasSynced, depReg.HasSynced) {
		t.Fatal("the informers never synced")
	}
	for _, name := range []string{"default/cm-0", "team-a/cm-2", "default/cm-1"} {
		if !cmSeen.saw("add " + name) {
			t.Fatalf("the ConfigMap informer was not told of %s at sync", name)
		}
	}
	if !depSeen.saw("add default/web-1") {
		t.Fatal("the Deployment informer was not told of web-1 at sync")
	}
	assertListerMatchesList(t, cmLister{cms.Lister()}, func() (map[string]string, error) {
		l, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return namesAndVersions(l.Items), nil
	})
	// The reflector's resourceVersion (from the LIST, or from the initial-events-end bookmark of
	// a watch-list) is no older than any object it holds. (Compared as integers: fieldstore's
	// and etcd's revisions are; clients are not meant to, hence a test-only check.)
	synced, err := strconv.ParseUint(cms.Informer().LastSyncResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("the informer's resourceVersion %q: %v", cms.Informer().LastSyncResourceVersion(), err)
	}
	for _, obj := range cms.Informer().GetStore().List() {
		if rv, _ := strconv.ParseUint(obj.(*corev1.ConfigMap).ResourceVersion, 10, 64); rv > synced {
			t.Fatalf("the informer synced at resourceVersion %d but holds %s at %d", synced, nameOf(obj), rv)
		}
	}

	// After sync: a create, an update, a delete, a scale.
	if _, err := client.CoreV1().ConfigMaps("team-a").Create(ctx, configMap("team-a", "cm-new", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm0, err := client.CoreV1().ConfigMaps("default").Get(ctx, "cm-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm0.Data["changed"] = "yes"
	if _, err := client.CoreV1().ConfigMaps("default").Update(ctx, cm0, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().ConfigMaps("default").Delete(ctx, "cm-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	scale, err := client.AppsV1().Deployments("default").GetScale(ctx, "web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 5
	if _, err := client.AppsV1().Deployments("default").UpdateScale(ctx, "web-0", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	eventually(t, "add team-a/cm-new", func() bool { return cmSeen.saw("add team-a/cm-new") })
	eventually(t, "delete default/cm-1", func() bool { return cmSeen.saw("delete default/cm-1") })
	eventually(t, "the update of default/cm-0", func() bool {
		cm, _ := cmSeen.object("default/cm-0").(*corev1.ConfigMap)
		return cm != nil && cm.Data["changed"] == "yes"
	})
	eventually(t, "web-0 scaled to 5", func() bool {
		d, _ := depSeen.object("default/web-0").(*appsv1.Deployment)
		return d != nil && *d.Spec.Replicas == 5
	})
	got, err := deps.Lister().Deployments("default").Get("web-0")
	if err != nil || *got.Spec.Replicas != 5 || got.Generation != 2 {
		t.Fatalf("the Deployment lister after the scale: %+v, %v", got, err)
	}
	if _, err := cms.Lister().ConfigMaps("default").Get("cm-1"); err == nil {
		t.Fatal("the lister still holds the deleted default/cm-1")
	}
	assertListerMatchesList(t, cmLister{cms.Lister()}, func() (map[string]string, error) {
		l, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return namesAndVersions(l.Items), nil
	})

	checkListPath(t, rec, "/api/v1/configmaps", watchList)
	checkListPath(t, rec, "/apis/apps/v1/deployments", watchList)
	for _, e := range rec.matching("GET", "/api/v1/configmaps?", "watch=true") {
		if e.Status == 200 && !strings.HasPrefix(e.RespContentType, ct) {
			t.Fatalf("watch %s answered Content-Type %q, want %s", e.URL, e.RespContentType, ct)
		}
	}
}

// lister is what assertListerMatchesList reads from an informer: namespace/name → resourceVersion.
type lister interface {
	versions() (map[string]string, error)
}

type cmLister struct {
	l interface {
		List(labels.Selector) ([]*corev1.ConfigMap, error)
	}
}

func (c cmLister) versions() (map[string]string, error) {
	items, err := c.l.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, cm := range items {
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return out, nil
}

type genericLister struct{ l cache.GenericLister }

func (g genericLister) versions() (map[string]string, error) {
	items, err := g.l.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, obj := range items {
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
	}
	return out, nil
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	if p, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return p, nil
	}
	return nil, fmt.Errorf("unexpected %T in a lister", obj)
}

func namesAndVersions[T any, P interface {
	*T
	metav1.Object
}](items []T) map[string]string {
	out := map[string]string{}
	for i := range items {
		m := P(&items[i])
		out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
	}
	return out
}

// assertListerMatchesList waits until the lister holds exactly what a fresh LIST returns, names
// and resourceVersions, and fails with the difference when it never does.
func assertListerMatchesList(t *testing.T, l lister, list func() (map[string]string, error)) {
	t.Helper()
	var cached, fresh map[string]string
	var err error
	ok := false
	eventuallyQuiet(func() bool {
		if fresh, err = list(); err != nil {
			return false
		}
		if cached, err = l.versions(); err != nil {
			return false
		}
		ok = mapsEqual(cached, fresh)
		return ok
	})
	if !ok {
		t.Fatalf("the lister never matched a fresh LIST (err %v):\nlister %v\nLIST   %v", err, cached, fresh)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// eventuallyQuiet polls cond until it holds or waitLimit passes; the caller reports.
func eventuallyQuiet(cond func() bool) {
	_ = pollUntil(context.Background(), cond)
}

// TestDynamicInformerCRD runs a dynamic shared informer factory on a custom resource (JSON on the
// wire, as for every custom resource), watch-list on and off.
func TestDynamicInformerCRD(t *testing.T) {
	for _, mode := range watchListModes {
		t.Run(mode.name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, mode.on)
			srv := startServer(t)
			cfg, _ := srv.config(t, "")
			informerCfg, rec := srv.config(t, "")
			registerWidgets(t, cfg)
			dyn := dynamic.NewForConfigOrDie(cfg)
			widgets := dyn.Resource(widgetGVR).Namespace("default")
			ctx := t.Context()
			for i := range 4 {
				if _, err := widgets.Create(ctx, widget(fmt.Sprintf("w-%d", i), int64(i)), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}

			factory := dynamicinformer.NewDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(informerCfg), 0)
			inf := factory.ForResource(widgetGVR)
			seen := newObserver()
			reg, err := inf.Informer().AddEventHandler(seen.handler())
			if err != nil {
				t.Fatal(err)
			}
			factory.Start(ctx.Done())
			t.Cleanup(factory.Shutdown)
			if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
				t.Fatal("the Widget informer never synced")
			}
			for i := range 4 {
				if !seen.saw(fmt.Sprintf("add default/w-%d", i)) {
					t.Fatalf("the informer was not told of w-%d at sync", i)
				}
			}

			w0, err := widgets.Get(ctx, "w-0", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(w0.Object, "red", "spec", "color"); err != nil {
				t.Fatal(err)
			}
			if _, err := widgets.Update(ctx, w0, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := widgets.Delete(ctx, "w-3", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := widgets.Create(ctx, widget("w-new", 9), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "w-0 turned red", func() bool {
				u, _ := seen.object("default/w-0").(*unstructured.Unstructured)
				if u == nil {
					return false
				}
				color, _, _ := unstructured.NestedString(u.Object, "spec", "color")
				return color == "red"
			})
			eventually(t, "delete default/w-3", func() bool { return seen.saw("delete default/w-3") })
			eventually(t, "add default/w-new", func() bool { return seen.saw("add default/w-new") })
			assertListerMatchesList(t, genericLister{inf.Lister()}, func() (map[string]string, error) {
				l, err := dyn.Resource(widgetGVR).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, err
				}
				return namesAndVersions(l.Items), nil
			})
			checkListPath(t, rec, "/apis/example.fieldstore.io/v1/widgets", mode.on)
		})
	}
}
