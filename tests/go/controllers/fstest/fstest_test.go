package fstest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"fieldstore.io/tests/controllers/fstest"
)

// A server starts on ephemeral ports, serves the Kubernetes API through both its Config and the
// kubeconfig `fieldstore kubeconfig` writes, and leaves nothing behind.
func TestServerStartsServesAndCleansUp(t *testing.T) {
	if fstest.Binary() == "" {
		t.Skip(fstest.SkipMessage)
	}
	ctx := context.Background()
	srv, err := fstest.Start(fstest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(srv.Config)
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get namespace default: %v", err)
	}
	if ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("namespace default phase %q, want Active", ns.Status.Phase)
	}

	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := srv.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	if cfg.Host != srv.URL {
		t.Errorf("kubeconfig server %q, want %q", cfg.Host, srv.URL)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "through-kubeconfig"}, Data: map[string]string{"k": "v"}}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through the kubeconfig: %v", err)
	}
	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "through-kubeconfig", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("read back: %v %v", got, err)
	}

	if err := srv.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if _, err := os.Stat(srv.DataDir); !os.IsNotExist(err) {
		t.Errorf("data directory %s still there after Stop (%v)", srv.DataDir, err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
		t.Errorf("the server still answers after Stop")
	}
}

// A store survives a restart on the same data directory, and two servers run side by side.
func TestReopenedStoreAndSideBySide(t *testing.T) {
	dir := t.TempDir()
	first := fstest.ForTest(t, fstest.Options{DataDir: dir})
	second := fstest.ForTest(t, fstest.Options{})
	if first.URL == second.URL {
		t.Fatalf("two servers on one address %s", first.URL)
	}
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"k": "v"}}
	if _, err := kubernetes.NewForConfigOrDie(first.Config).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(second.Config).CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err == nil {
		t.Errorf("the second server's store holds the first's ConfigMap")
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	again := fstest.ForTest(t, fstest.Options{DataDir: dir})
	got, err := kubernetes.NewForConfigOrDie(again.Config).CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("after a restart on %s: %v %v", dir, got, err)
	}
}

// Servers started from a template each get a copy: the template's objects, and their own
// changes kept from each other.
func TestTemplateIsCopiedPerServer(t *testing.T) {
	dir := t.TempDir()
	prep := fstest.ForTest(t, fstest.Options{DataDir: dir})
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "fixture"}, Data: map[string]string{"k": "v"}}
	if _, err := kubernetes.NewForConfigOrDie(prep.Config).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := prep.Stop(); err != nil {
		t.Fatal(err)
	}
	a := kubernetes.NewForConfigOrDie(fstest.ForTest(t, fstest.Options{Template: dir}).Config).CoreV1().ConfigMaps("default")
	b := kubernetes.NewForConfigOrDie(fstest.ForTest(t, fstest.Options{Template: dir}).Config).CoreV1().ConfigMaps("default")
	if err := a.Delete(ctx, "fixture", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete the fixture in the first copy: %v", err)
	}
	if got, err := b.Get(ctx, "fixture", metav1.GetOptions{}); err != nil || got.Data["k"] != "v" {
		t.Errorf("the second copy's fixture: %v %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err != nil {
		t.Errorf("the template itself: %v", err)
	}
}
