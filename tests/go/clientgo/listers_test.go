package clientgo

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// writers and changesPerWriter make the 1,000 changes: creates, updates and deletes of
// ConfigMaps, by concurrent writers each on its own objects.
const (
	writers          = 4
	changesPerWriter = 250
)

// TestListersInSyncAfter1000Changes runs a ConfigMap informer (protobuf, client-go's default;
// watch-list on and off) while concurrent writers make 1,000 changes; then its lister, and what
// its event handler was last told of each object, equal a fresh LIST, resourceVersions included.
func TestListersInSyncAfter1000Changes(t *testing.T) {
	for _, mode := range watchListModes {
		t.Run(mode.name, func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, mode.on)
			testListersInSync(t)
		})
	}
}

func testListersInSync(t *testing.T) {
	srv := startServer(t)
	cfg, _ := srv.config(t, "")
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	for i := range 20 {
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", fmt.Sprintf("before-%d", i), map[string]string{"n": "0"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	factory := informers.NewSharedInformerFactory(client, 0)
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

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			if err := write(t, client, w); err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// A last write after all the others: once the handler has seen it, the watch has delivered
	// everything before it.
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, configMap("default", "sentinel", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "add default/sentinel", func() bool { return seen.saw("add default/sentinel") })

	list, err := client.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fresh := namesAndVersions(list.Items)
	// 20 before; each writer leaves its 2·250/5 = 100 created minus 250/5 = 50 deleted; the
	// sentinel. (Other namespaces may hold the server's own: kube-apiserver keeps one in
	// kube-system.)
	inDefault := 0
	for _, cm := range list.Items {
		if cm.Namespace == "default" {
			inDefault++
		}
	}
	if want := 20 + writers*50 + 1; inDefault != want {
		t.Fatalf("a fresh LIST holds %d ConfigMaps in default, want %d", inDefault, want)
	}
	cached, err := cmLister{cms.Lister()}.versions()
	if err != nil {
		t.Fatal(err)
	}
	if !mapsEqual(cached, fresh) {
		t.Fatalf("the lister differs from a fresh LIST:\n%s", diff(cached, fresh))
	}
	told := map[string]string{}
	seen.mu.Lock()
	for name, obj := range seen.last {
		told[name] = obj.(*corev1.ConfigMap).ResourceVersion
	}
	seen.mu.Unlock()
	if !mapsEqual(told, fresh) {
		t.Fatalf("what the handler was last told differs from a fresh LIST:\n%s", diff(told, fresh))
	}
	// Content too, not only versions: every object's data as the server has it.
	for _, item := range list.Items {
		got, err := cms.Lister().ConfigMaps(item.Namespace).Get(item.Name)
		if err != nil || fmt.Sprint(got.Data) != fmt.Sprint(item.Data) || fmt.Sprint(got.Labels) != fmt.Sprint(item.Labels) {
			t.Fatalf("lister's %s: %v (%v), LIST's %v", item.Name, got, err, item.Data)
		}
	}
}

// write makes changesPerWriter changes on the writer's own ConfigMaps: of every five, two creates,
// two updates and a delete.
func write(t *testing.T, client kubernetes.Interface, w int) error {
	ctx := t.Context()
	cms := client.CoreV1().ConfigMaps("default")
	var live []*corev1.ConfigMap
	created := 0
	for i := range changesPerWriter {
		switch i % 5 {
		case 0, 3:
			cm, err := cms.Create(ctx, configMap("default", fmt.Sprintf("w%d-%d", w, created), map[string]string{"n": "0"}), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			created++
			live = append(live, cm)
		case 1, 2:
			k := i % len(live)
			cm := live[k].DeepCopy()
			cm.Data["n"] = fmt.Sprint(i)
			updated, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
			if err != nil {
				return err
			}
			live[k] = updated
		case 4:
			if err := cms.Delete(ctx, live[0].Name, metav1.DeleteOptions{}); err != nil {
				return err
			}
			live = live[1:]
		}
	}
	return nil
}

// diff lists the entries where a and b differ.
func diff(a, b map[string]string) string {
	out := ""
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out += fmt.Sprintf("  %s: %q vs %q\n", k, v, w)
		}
	}
	for k, w := range b {
		if _, ok := a[k]; !ok {
			out += fmt.Sprintf("  %s: missing vs %q\n", k, w)
		}
	}
	return out
}
