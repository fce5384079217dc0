// Package envtest_test is an operator's envtest suite run on `fieldstore serve`: the suite is
// written as kubebuilder scaffolds it (an envtest.Environment with CRDDirectoryPaths, no
// control-plane settings), and only the environment points it at fieldstore:
//
//	fieldstore --data "$(mktemp -d)" serve --listen 127.0.0.1:0 --http 127.0.0.1:0 &
//	# it prints: fieldstore: serving on … kubernetes API http://127.0.0.1:PORT …
//	fieldstore kubeconfig --server http://127.0.0.1:PORT > kubeconfig
//	USE_EXISTING_CLUSTER=true KUBECONFIG=$PWD/kubeconfig go test ./...
//
// TestMain does just that with the fstest package when USE_EXISTING_CLUSTER is unset (with it
// set, the suite runs on whatever cluster KUBECONFIG names, e.g. the reference kube-apiserver).
package envtest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"fieldstore.io/tests/controllers/fstest"
	"fieldstore.io/tests/controllers/widget"
)

var (
	// What a kubebuilder suite holds: the environment, its config, a client.
	testEnv   *envtest.Environment
	cfg       *rest.Config
	k8sClient client.Client
	scheme    = runtime.NewScheme()
	// Why the tests skip, when they do.
	skipReason string
)

// gadgetCRD is a CRD given in Go (envtest's CRDs field), beside the Widget CRD read from its
// directory (CRDDirectoryPaths).
var gadgetCRD = &apiextensionsv1.CustomResourceDefinition{
	ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.fieldstore.io"},
	Spec: apiextensionsv1.CustomResourceDefinitionSpec{
		Group: "example.fieldstore.io",
		Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Gadget", ListKind: "GadgetList", Plural: "gadgets", Singular: "gadget"},
		Scope: apiextensionsv1.ClusterScoped,
		Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
			Name: "v1alpha1", Served: true, Storage: true,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", XPreserveUnknownFields: ptrTrue()},
				},
			}},
		}},
	},
}

func ptrTrue() *bool { t := true; return &t }

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("USE_EXISTING_CLUSTER") == "" {
		if fstest.Binary() == "" {
			skipReason = fstest.SkipMessage
			return m.Run()
		}
		srv, err := fstest.Start(fstest.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "fstest:", err)
			return 1
		}
		defer func() {
			if err := srv.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "fstest:", err)
			}
		}()
		dir, err := os.MkdirTemp("", "envtest-kubeconfig-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		kubeconfig := filepath.Join(dir, "kubeconfig")
		if err := srv.WriteKubeconfig(kubeconfig); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Setenv("KUBECONFIG", kubeconfig)
		os.Setenv("USE_EXISTING_CLUSTER", "true")
	}

	// From here on, the suite as an operator has it.
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "widget", "crd")},
		CRDs:                  []*apiextensionsv1.CustomResourceDefinition{gadgetCRD.DeepCopy()},
		ErrorIfCRDPathMissing: true,
		CRDInstallOptions:     envtest.CRDInstallOptions{CleanUpAfterUse: true},
	}
	var err error
	cfg, err = testEnv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "envtest start:", err)
		return 1
	}
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := widget.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := testEnv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "envtest stop:", err)
		return 1
	}
	// CleanUpAfterUse: Stop deleted the CRDs it installed (kube-apiserver takes a moment: its
	// customresourcecleanup finalizer deletes the CRD's objects first; fieldstore deletes at once).
	for _, name := range []string{"widgets.example.fieldstore.io", "gadgets.example.fieldstore.io"} {
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := k8sClient.Get(ctxBackground(), client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "CRD %s still there 20 s after envtest's Stop (CleanUpAfterUse): %v\n", name, err)
				code = 1
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return code
}

// skipUnlessReady skips t when the suite has no cluster.
func skipUnlessReady(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
}
