package clientgo

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// TestInformerAcrossServerRestart kills the server (SIGKILL) under a running ConfigMap informer
// and starts it again on the same data directory and address: the reflector reconnects by
// itself and the lister follows the changes made after the restart, equal to a fresh LIST.
func TestInformerAcrossServerRestart(t *testing.T) {
	srv := startServer(t)
	cfg, _ := srv.config(t, "")
	informerCfg, rec := srv.config(t, "")
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	cms := client.CoreV1().ConfigMaps("default")
	for i := range 10 {
		if _, err := cms.Create(ctx, configMap("default", fmt.Sprintf("cm-%d", i), map[string]string{"v": "1"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(informerCfg), 0)
	inf := factory.Core().V1().ConfigMaps()
	seen := newObserver()
	reg, err := inf.Informer().AddEventHandler(seen.handler())
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(factory.Shutdown)
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		t.Fatal("the informer never synced")
	}
	before := len(rec.all())
	t.Cleanup(func() {
		// How the reflector came back: fieldstore keeps its revisions across a restart, so a
		// watch from the last resourceVersion may resume where kube-apiserver (whose watch
		// cache starts afresh) would answer 410 and the reflector list again; either is correct.
		for _, e := range rec.all()[before:] {
			t.Logf("after the restart: %s %s -> %d", e.Method, e.URL, e.Status)
		}
	})

	srv.restart(t)
	eventually(t, "the restarted server answering", func() bool {
		_, err := cms.Get(ctx, "cm-0", metav1.GetOptions{})
		return err == nil
	})
	if _, err := cms.Create(ctx, configMap("default", "after-restart", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm1, err := cms.Get(ctx, "cm-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm1.Data["v"] = "2"
	if _, err := cms.Update(ctx, cm1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "cm-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "add default/after-restart", func() bool { return seen.saw("add default/after-restart") })
	eventually(t, "delete default/cm-2", func() bool { return seen.saw("delete default/cm-2") })
	assertListerMatchesList(t, cmLister{inf.Lister()}, func() (map[string]string, error) {
		l, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		return namesAndVersions(l.Items), nil
	})
	got, err := inf.Lister().ConfigMaps("default").Get("cm-1")
	if err != nil || got.Data["v"] != "2" {
		t.Fatalf("cm-1 in the lister after the restart: %v (%v)", got, err)
	}
}
