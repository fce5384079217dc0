package widget_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"fieldstore.io/tests/controllers/fstest"
	"fieldstore.io/tests/controllers/widget"
)

// One server for the package's tests, started by the first test that needs it; each test
// works in a namespace of its own with a manager of its own.
var (
	shared     *fstest.Server
	sharedErr  error
	sharedOnce sync.Once
	scheme     = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := widget.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if os.Getenv("FSTEST_VERBOSE") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "fstest:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// server is the package's server with the Widget CRD installed; it skips t when there is no
// fieldstore binary. With FSTEST_KUBECONFIG set, the tests run on that cluster instead (the
// reference kube-apiserver, to compare).
func server(t *testing.T) *fstest.Server {
	t.Helper()
	other := os.Getenv(fstest.KubeconfigEnv)
	if fstest.Binary() == "" && other == "" {
		t.Skip(fstest.SkipMessage)
	}
	sharedOnce.Do(func() {
		if other != "" {
			shared, sharedErr = fstest.Existing(other)
		} else {
			shared, sharedErr = fstest.Start(fstest.Options{})
		}
		if sharedErr != nil {
			return
		}
		// envtest's installer: creates the CRD and waits until discovery serves it.
		_, sharedErr = envtest.InstallCRDs(shared.Config, envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join("crd")},
			ErrorIfPathMissing: true,
		})
	})
	if sharedErr != nil {
		t.Fatalf("fieldstore: %v", sharedErr)
	}
	return shared
}

// env is one test's world: a namespace, a direct (uncached) client, and a running manager with
// the Widget reconciler whose cache covers that namespace.
type env struct {
	ns     string
	direct client.Client
	mgr    ctrl.Manager
	rec    *widget.Reconciler
	events *eventLog
}

// newEnv makes the namespace and starts the manager; configure may set reconciler hooks
// before it starts. The manager stops when t ends.
func newEnv(t *testing.T, configure func(*widget.Reconciler)) *env {
	t.Helper()
	srv := server(t)
	ctx, cancel := context.WithCancel(context.Background())
	direct, err := client.New(srv.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// A new namespace each run, so that the tests run again on a long-lived cluster too.
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: strings.ToLower(t.Name()) + "-"}}
	if err := direct.Create(ctx, nsObj); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	ns := nsObj.Name
	mgr, err := ctrl.NewManager(srv.Config, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := &widget.Reconciler{Client: mgr.GetClient(), Scheme: scheme, Recorder: mgr.GetEventRecorder(widget.FieldOwner)}
	if configure != nil {
		configure(rec)
	}
	if err := rec.SetupWithManager(mgr); err != nil {
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
	// Runs before the manager stops (cleanups run last first): the test's Widgets are deleted
	// while their controller still runs their finalizer, so that none is left holding its CRD's
	// deletion on a long-lived cluster.
	t.Cleanup(func() {
		if err := direct.DeleteAllOf(context.Background(), &widget.Widget{}, client.InNamespace(ns)); err != nil {
			t.Errorf("delete the Widgets: %v", err)
			return
		}
		eventually(t, "the Widgets finalized", func() (bool, string) {
			var left widget.WidgetList
			if err := direct.List(context.Background(), &left, client.InNamespace(ns)); err != nil {
				return false, err.Error()
			}
			return len(left.Items) == 0, fmt.Sprintf("%d left", len(left.Items))
		})
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the manager's cache did not sync")
	}
	events := &eventLog{}
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(events.handler()); err != nil {
		t.Fatal(err)
	}
	return &env{ns: ns, direct: direct, mgr: mgr, rec: rec, events: events}
}

// eventually polls cond every 20 ms until it holds, failing t after 20 s with cond's last
// account of what it saw.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for {
		var ok bool
		ok, last = cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s; last seen: %s", what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// eventLog records what the manager's ConfigMap informer delivered: "ADD name uid", …
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(kind string, obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("%s %s %s", kind, cm.Name, cm.UID))
}

func (l *eventLog) handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.add("ADD", obj) },
		UpdateFunc: func(_, obj any) { l.add("UPDATE", obj) },
		DeleteFunc: func(obj any) { l.add("DELETE", obj) },
	}
}

// has says whether the log holds the event.
func (l *eventLog) has(event string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e == event {
			return true
		}
	}
	return false
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.events, "; ")
}
