package clientgo

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// binEnv names the environment variable holding the path of the fieldstore binary.
const binEnv = "FIELDSTORE_BIN"

// protobuf is the content type client-go's generated clientsets send and accept for built-in
// kinds (their default since client-go 0.35 when rest.Config.ContentType is empty).
const protobuf = "application/vnd.kubernetes.protobuf"

// jsonCT is JSON, what the dynamic and metadata clients speak and what a config can ask for.
const jsonCT = "application/json"

// waitLimit bounds every wait for the framework to observe something: a deadline for a failure
// to be reported, not a measure (a healthy run takes milliseconds).
const waitLimit = 30 * time.Second

func TestMain(m *testing.M) {
	if id := os.Getenv(candidateEnv); id != "" {
		os.Exit(runCandidate(id))
	}
	if os.Getenv(binEnv) == "" && os.Getenv(referenceEnv) == "" {
		fmt.Printf("skipped: the client-go tests need %s=PATH of a fieldstore binary (tests/go/run.sh BIN sets it)\n", binEnv)
	}
	os.Exit(m.Run())
}

// server is one `fieldstore serve` on a temporary data directory and ephemeral loopback ports,
// stopped (killed) when the test ends.
type server struct {
	bin        string
	data       string    // the data directory
	url        string    // the Kubernetes HTTP API, http://127.0.0.1:PORT
	kubeconfig []byte    // what `fieldstore kubeconfig --server URL` prints
	cmd        *exec.Cmd // the running process (nil on the reference)
}

// referenceEnv, when set, names reference/run.sh: each test then runs against a fresh
// kube-apiserver on etcd (the reference build) instead of fieldstore, so that the assertions can
// be checked against Kubernetes itself (REFERENCE_BIN as run.sh reads it).
const referenceEnv = "CLIENTGO_TEST_REFERENCE"

// startServer starts a fresh server for t, or skips t when no binary is given.
func startServer(t *testing.T) *server {
	t.Helper()
	if run := os.Getenv(referenceEnv); run != "" {
		return startReference(t, run)
	}
	bin := os.Getenv(binEnv)
	if bin == "" {
		t.Skipf("%s is not set: no fieldstore binary to test", binEnv)
	}
	s := &server{bin: bin, data: t.TempDir()}
	s.launch(t, "127.0.0.1:0")
	kubeconfig, err := exec.Command(bin, "kubeconfig", "--server", s.url).Output()
	if err != nil {
		t.Fatalf("fieldstore kubeconfig --server %s: %v", s.url, err)
	}
	s.kubeconfig = kubeconfig
	return s
}

// launch starts `fieldstore serve` on s's data directory with the HTTP API on http (host:port)
// and waits until it serves; it is killed when t ends.
func (s *server) launch(t *testing.T, http string) {
	t.Helper()
	cmd := exec.Command(s.bin, "--data", s.data, "serve", "--listen", "127.0.0.1:0", "--http", http)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", s.bin, err)
	}
	s.cmd = cmd
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("fieldstore stderr:\n%s", stderr.String())
		}
	})
	// "fieldstore: serving on 127.0.0.1:PORT (http; data DIR, kubernetes API http://127.0.0.1:PORT)"
	lines := bufio.NewReader(stdout)
	line, err := lines.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "fieldstore: serving on ") {
		t.Fatalf("unexpected first line %q (%v); stderr: %s", line, err, stderr.String())
	}
	go func() { _, _ = lines.WriteTo(discard{}) }()
	_, api, ok := strings.Cut(line, "kubernetes API ")
	if !ok {
		t.Fatalf("no kubernetes API address in %q", line)
	}
	s.url, _, _ = strings.Cut(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(api), ")")), ",")
}

// restart kills the server (SIGKILL: no orderly shutdown) and starts it again on the same data
// directory and HTTP address.
func (s *server) restart(t *testing.T) {
	t.Helper()
	if s.cmd == nil {
		t.Skip("the reference is not restarted")
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.launch(t, strings.TrimPrefix(s.url, "http://"))
}

// startReference starts kube-apiserver and etcd with reference/run.sh on a fresh run directory.
func startReference(t *testing.T, run string) *server {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "reference")
	if out, err := exec.Command("bash", run, "start", dir).CombinedOutput(); err != nil {
		t.Fatalf("%s start: %v\n%s", run, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("bash", run, "stop", dir).Run() })
	kubeconfig, err := os.ReadFile(filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	return &server{kubeconfig: kubeconfig}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// config is a rest.Config for s read from its kubeconfig, with no client-side rate limit, every
// request recorded by the returned recorder. A non-empty ct is the content type asked for both
// ways (protobuf: built-in kinds in protobuf, as client-go's own components ask; JSON).
func (s *server) config(t *testing.T, ct string) (*rest.Config, *recorder) {
	t.Helper()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig from fieldstore: %v", err)
	}
	cfg.QPS = -1
	cfg.Burst = 1 << 20
	cfg.UserAgent = "fieldstore-clientgo-test"
	if ct != "" {
		cfg.ContentType = ct
		cfg.AcceptContentTypes = ct + ",application/json"
	}
	rec := &recorder{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper{next: rt, rec: rec}
	}
	return cfg, rec
}

// exchange is one request client-go sent and what came back.
type exchange struct {
	Method, URL, Accept, ContentType string // the request
	Status                           int
	RespContentType                  string
}

// recorder keeps every exchange of the clients built from one config.
type recorder struct {
	mu   sync.Mutex
	seen []exchange
}

func (r *recorder) all() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.seen...)
}

// matching returns the exchanges whose method is method and whose URL contains every part.
func (r *recorder) matching(method string, parts ...string) []exchange {
	var out []exchange
next:
	for _, e := range r.all() {
		if e.Method != method {
			continue
		}
		for _, p := range parts {
			if !strings.Contains(e.URL, p) {
				continue next
			}
		}
		out = append(out, e)
	}
	return out
}

type roundTripper struct {
	next http.RoundTripper
	rec  *recorder
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(req)
	e := exchange{Method: req.Method, URL: req.URL.RequestURI(), Accept: req.Header.Get("Accept"), ContentType: req.Header.Get("Content-Type")}
	if resp != nil {
		e.Status = resp.StatusCode
		e.RespContentType = resp.Header.Get("Content-Type")
	}
	rt.rec.mu.Lock()
	rt.rec.seen = append(rt.rec.seen, e)
	rt.rec.mu.Unlock()
	return resp, err
}

// isWatchList says whether e is a watch-list request: a watch streaming the initial state
// (sendInitialEvents=true, resourceVersionMatch=NotOlderThan, bookmarks on).
func isWatchList(e exchange) bool {
	return strings.Contains(e.URL, "watch=true") && strings.Contains(e.URL, "sendInitialEvents=true") &&
		strings.Contains(e.URL, "resourceVersionMatch=NotOlderThan") && strings.Contains(e.URL, "allowWatchBookmarks=true")
}

// isList says whether e is a plain LIST (not a watch).
func isList(e exchange) bool {
	return e.Method == http.MethodGet && !strings.Contains(e.URL, "watch=")
}

// widgetGVR is the custom resource the tests register (namespaced; status and scale subresources).
var widgetGVR = schema.GroupVersionResource{Group: "example.fieldstore.io", Version: "v1", Resource: "widgets"}

// registerWidgets creates the Widget CRD through the dynamic client and waits until it is
// Established.
func registerWidgets(t *testing.T, cfg *rest.Config) {
	t.Helper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets.example.fieldstore.io"},
		"spec": map[string]any{
			"group": "example.fieldstore.io",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}, "scale": map[string]any{
					"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector",
				}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{"type": "object", "properties": map[string]any{
							"size":  map[string]any{"type": "integer"},
							"color": map[string]any{"type": "string"},
						}},
						"status": map[string]any{"type": "object", "properties": map[string]any{
							"ready":              map[string]any{"type": "boolean"},
							"replicas":           map[string]any{"type": "integer"},
							"selector":           map[string]any{"type": "string"},
							"observedGeneration": map[string]any{"type": "integer"},
						}},
					},
				}},
			}},
		},
	}}
	dyn := dynamic.NewForConfigOrDie(cfg)
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	ctx := context.Background()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Widget CRD: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, waitLimit, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, "widgets.example.fieldstore.io", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the Widget CRD never became Established: %v", err)
	}
}

// widget is a Widget in namespace default.
func widget(name string, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.fieldstore.io/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name, "namespace": "default", "labels": map[string]any{"app": "widgets"}},
		"spec":       map[string]any{"size": size, "color": "blue"},
	}}
}

// eventually polls cond until it holds, failing t with what after waitLimit.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := pollUntil(context.Background(), cond); err != nil {
		t.Fatalf("never observed: %s", what)
	}
}

// nameOf is the namespace/name of any object, typed or not.
func nameOf(obj any) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("<%T>", obj)
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// pollUntil polls cond every 10ms until it holds (nil) or waitLimit passes (an error).
func pollUntil(ctx context.Context, cond func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, waitLimit, true,
		func(context.Context) (bool, error) { return cond(), nil })
}
