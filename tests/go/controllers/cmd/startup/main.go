// Command startup measures what a controller test pays for its API server: `fieldstore serve`
// (through the fstest package) beside envtest's kube-apiserver + etcd, in one run, side by side.
// It prints figures and asserts nothing (not part of CI).
//
//	FIELDSTORE_BIN=target/release/fieldstore KUBEBUILDER_ASSETS=reference/bin \
//	    go run ./cmd/startup [-n 10] [-envtest-n 5]
//
// Each figure is the median and the range of several repetitions:
//   - start to ready, empty: process start until /readyz answers ok (envtest: Environment.Start,
//     which starts etcd and kube-apiserver, waits for both, and provisions an admin user);
//   - start to ready, holding 10 CRDs: fieldstore reopening a data directory that holds 10 CRDs
//     beside its 37 built-in kinds, until ready and the 10 served in discovery (envtest has no
//     such state: each start is a fresh etcd, so its figure is start + install);
//   - install 10 CRDs: envtest.InstallCRDs (create, then wait until discovery serves them);
//   - a fresh server per test: start to ready + stop; and on a copy of a prepared store holding
//     the 10 CRDs (fstest's Template): copy + start + the CRDs served + stop;
//   - a fresh namespace per test: create a namespace and a ConfigMap in it, delete the namespace.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"fieldstore.io/tests/controllers/fstest"
)

func main() {
	n := flag.Int("n", 10, "repetitions of each fieldstore figure")
	en := flag.Int("envtest-n", 5, "repetitions of each envtest figure")
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	if fstest.Binary() == "" {
		fail(fmt.Errorf("set FIELDSTORE_BIN"))
	}
	fmt.Printf("fieldstore serve (%s), %d repetitions each\n", fstest.Binary(), *n)
	fs := measureFieldstore(*n)
	var et map[string][]time.Duration
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		fmt.Printf("envtest (kube-apiserver + etcd from %s), %d repetitions each\n", assets, *en)
		et = measureEnvtest(*en)
	} else {
		fmt.Println("envtest skipped: set KUBEBUILDER_ASSETS to a directory with kube-apiserver and etcd")
	}
	fmt.Println()
	fmt.Printf("| %-52s | %-26s | %-26s |\n", "median (range), ms", "fieldstore serve", "envtest: kube-apiserver + etcd")
	fmt.Printf("|%s|%s|%s|\n", strings.Repeat("-", 54), strings.Repeat("-", 28), strings.Repeat("-", 28))
	for _, row := range rows {
		fmt.Printf("| %-52s | %-26s | %-26s |\n", row, summary(fs[row]), summary(et[row]))
	}
}

// The figures, in the order printed.
const (
	startEmpty   = "start to ready, empty"
	startHolding = "start to ready, store holding 10 CRDs"
	install10    = "install 10 CRDs, until served"
	startInstall = "start + install 10 CRDs"
	perTestStart = "a fresh server per test (start + stop)"
	perTestFork  = "a fresh server per test from a 10-CRD store copy"
	perTestNS    = "a fresh namespace per test"
)

var rows = []string{startEmpty, startHolding, install10, startInstall, perTestStart, perTestFork, perTestNS}

func measureFieldstore(n int) map[string][]time.Duration {
	out := map[string][]time.Duration{}
	for range n {
		t0 := time.Now()
		s := must(fstest.Start(fstest.Options{}))
		ready := time.Since(t0)
		out[startEmpty] = append(out[startEmpty], ready)
		t1 := time.Now()
		must(envtest.InstallCRDs(s.Config, envtest.CRDInstallOptions{CRDs: crds()}))
		out[install10] = append(out[install10], time.Since(t1))
		out[startInstall] = append(out[startInstall], ready+time.Since(t1))
		out[perTestNS] = append(out[perTestNS], namespacePerTest(s.Config))
		t2 := time.Now()
		check(s.Stop())
		out[perTestStart] = append(out[perTestStart], ready+time.Since(t2))
	}
	// A store that holds the 10 CRDs, reopened again and again.
	dir := must(os.MkdirTemp("", "startup-"))
	defer os.RemoveAll(dir)
	s := must(fstest.Start(fstest.Options{DataDir: dir}))
	must(envtest.InstallCRDs(s.Config, envtest.CRDInstallOptions{CRDs: crds()}))
	check(s.Stop())
	for range n {
		t0 := time.Now()
		s := must(fstest.Start(fstest.Options{DataDir: dir}))
		// Served from the start: WaitForCRDs returns at its first look.
		check(envtest.WaitForCRDs(s.Config, crds(), envtest.CRDInstallOptions{MaxTime: 10 * time.Second, PollInterval: 5 * time.Millisecond}))
		out[startHolding] = append(out[startHolding], time.Since(t0))
		check(s.Stop())
	}
	for range n {
		t0 := time.Now()
		s := must(fstest.Start(fstest.Options{Template: dir}))
		check(envtest.WaitForCRDs(s.Config, crds(), envtest.CRDInstallOptions{MaxTime: 10 * time.Second, PollInterval: 5 * time.Millisecond}))
		check(s.Stop())
		out[perTestFork] = append(out[perTestFork], time.Since(t0))
	}
	return out
}

func measureEnvtest(n int) map[string][]time.Duration {
	out := map[string][]time.Duration{}
	for range n {
		env := &envtest.Environment{}
		t0 := time.Now()
		cfg := must(env.Start())
		ready := time.Since(t0)
		out[startEmpty] = append(out[startEmpty], ready)
		t1 := time.Now()
		must(envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds()}))
		out[install10] = append(out[install10], time.Since(t1))
		out[startInstall] = append(out[startInstall], ready+time.Since(t1))
		out[perTestNS] = append(out[perTestNS], namespacePerTest(cfg))
		t2 := time.Now()
		check(env.Stop())
		out[perTestStart] = append(out[perTestStart], ready+time.Since(t2))
	}
	return out
}

// namespacePerTest is one test's isolation by namespace: create it and a ConfigMap in it, then
// delete the namespace (the request; kube-apiserver then leaves it Terminating, as no namespace
// controller runs beside envtest).
func namespacePerTest(cfg *rest.Config) time.Duration {
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	t0 := time.Now()
	ns := must(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}, metav1.CreateOptions{}))
	must(cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}))
	check(cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}))
	return time.Since(t0)
}

// crds are ten small namespaced CRDs in group bench.fieldstore.io.
func crds() []*apiextensionsv1.CustomResourceDefinition {
	out := make([]*apiextensionsv1.CustomResourceDefinition, 10)
	for i := range out {
		kind := fmt.Sprintf("Thing%d", i)
		plural := strings.ToLower(kind) + "s"
		out[i] = &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".bench.fieldstore.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "bench.fieldstore.io",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"size":  {Type: "integer"},
								"name":  {Type: "string"},
								"items": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
							}},
							"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"ready": {Type: "boolean"}}},
						},
					}},
				}},
			},
		}
	}
	return out
}

// summary is "median (min–max)" in milliseconds.
func summary(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d.Microseconds())/1000) }
	var med time.Duration
	if len(s)%2 == 1 {
		med = s[len(s)/2]
	} else {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%s (%s–%s)", ms(med), ms(s[0]), ms(s[len(s)-1]))
}

func must[T any](v T, err error) T {
	check(err)
	return v
}

func check(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, filepath.Base(os.Args[0])+":", err)
	os.Exit(1)
}
