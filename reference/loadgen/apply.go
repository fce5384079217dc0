package main

import (
	"context"
	"fmt"
	"time"

	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

const applyWorkers = 8

// deployment is the apply configuration of Deployment d-i as manager "loadgen" writes it.
func deployment(i int, image string) *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"app": fmt.Sprintf("d-%05d", i)}
	return appsv1ac.Deployment(fmt.Sprintf("d-%05d", i), "apply").
		WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(
					corev1ac.Container().WithName("web").WithImage(image).
						WithPorts(corev1ac.ContainerPort().WithContainerPort(80).WithName("http")).
						WithEnv(corev1ac.EnvVar().WithName("MODE").WithValue("load")),
				))))
}

// runApply is workload 2a: Server-Side Apply of Deployments (protobuf answers, the apply body
// in JSON as client-go sends it), in four phases over the same objects: create, re-apply
// unchanged, change one field (the image), and a second manager taking one field (replicas,
// owned by the first) with force.
func runApply(o *options, srv *Server, out emitter) {
	cs := srv.typed()
	if err := ensureNamespace(cs, "apply"); err != nil {
		out.fatal(srv, "namespace apply: %v", err)
	}
	phases := []struct {
		name  string
		apply func(cs *kubernetes.Clientset, i int) error
	}{
		{"ssa deploy: create", func(cs *kubernetes.Clientset, i int) error {
			_, err := cs.AppsV1().Deployments("apply").Apply(context.Background(), deployment(i, "nginx:1.27"), metav1.ApplyOptions{FieldManager: "loadgen"})
			return err
		}},
		{"ssa deploy: unchanged", func(cs *kubernetes.Clientset, i int) error {
			_, err := cs.AppsV1().Deployments("apply").Apply(context.Background(), deployment(i, "nginx:1.27"), metav1.ApplyOptions{FieldManager: "loadgen"})
			return err
		}},
		{"ssa deploy: one field", func(cs *kubernetes.Clientset, i int) error {
			_, err := cs.AppsV1().Deployments("apply").Apply(context.Background(), deployment(i, "nginx:1.28"), metav1.ApplyOptions{FieldManager: "loadgen"})
			return err
		}},
		{"ssa deploy: 2nd manager force", func(cs *kubernetes.Clientset, i int) error {
			ac := appsv1ac.Deployment(fmt.Sprintf("d-%05d", i), "apply").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3))
			_, err := cs.AppsV1().Deployments("apply").Apply(context.Background(), ac, metav1.ApplyOptions{FieldManager: "scaler", Force: true})
			return err
		}},
	}
	for _, p := range phases {
		m := begin(srv)
		parallel(o.deployments, applyWorkers, func(i int) {
			t := time.Now()
			err := p.apply(cs, i)
			m.record(time.Since(t), err)
		})
		out.emit(m.end(p.name, "apply", int64(o.deployments)))
	}
}

var widgets = schema.GroupVersionResource{Group: "load.fieldstore.io", Version: "v1", Resource: "widgets"}

// widgetCRD declares Widget, whose spec.items is a map-list keyed by name: SSA merges it item by
// item and managedFields names every item.
func widgetCRD() *apiextv1.CustomResourceDefinition {
	str := apiextv1.JSONSchemaProps{Type: "string"}
	mapList := "map"
	item := apiextv1.JSONSchemaProps{Type: "object", Required: []string{"name"},
		Properties: map[string]apiextv1.JSONSchemaProps{"name": str, "value": str}}
	spec := apiextv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
		"items": {Type: "array", Items: &apiextv1.JSONSchemaPropsOrArray{Schema: &item},
			XListType: &mapList, XListMapKeys: []string{"name"}},
	}}
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.load.fieldstore.io"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "load.fieldstore.io",
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextv1.NamespaceScoped,
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{"spec": spec}}}}},
		},
	}
}

// widget is Widget name with n items; item `changed` (if >= 0) has another value.
func widget(name string, n, changed int) *unstructured.Unstructured {
	items := make([]any, n)
	for i := range items {
		v := "v1"
		if i == changed {
			v = "v2"
		}
		items[i] = map[string]any{"name": fmt.Sprintf("item-%05d", i), "value": v}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "load.fieldstore.io/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "apply"},
		"spec":     map[string]any{"items": items},
	}}
}

// runCRApply is workload 2b: the Widget CRD created over apiextensions.k8s.io/v1 (JSON, as kubectl
// does), then Widgets of 1,000 and of 10,000 items applied (JSON, dynamic client), each created
// and then re-applied with one item changed.
func runCRApply(o *options, srv *Server, out emitter) {
	ext := apiextclient.NewForConfigOrDie(srv.config(false))
	_, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(context.Background(), widgetCRD(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		out.fatal(srv, "create CRD widgets.load.fieldstore.io: %v", err)
	}
	cs := srv.typed()
	if err := ensureNamespace(cs, "apply"); err != nil {
		out.fatal(srv, "namespace apply: %v", err)
	}
	dc := srv.dyn()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := dc.Resource(widgets).Namespace("apply").List(context.Background(), metav1.ListOptions{Limit: 1})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			out.fatal(srv, "widgets not served 60 s after the CRD was created: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, size := range []struct {
		items, objects int
		label          string
	}{{1000, o.crObjects1k, "1k"}, {10000, o.crObjects10, "10k"}} {
		for _, phase := range []struct {
			name    string
			changed int
		}{{"create", -1}, {"one item changed", size.items / 2}} {
			m := begin(srv)
			parallel(size.objects, 2, func(i int) {
				w := widget(fmt.Sprintf("w%s-%03d", size.label, i), size.items, phase.changed)
				t := time.Now()
				_, err := dc.Resource(widgets).Namespace("apply").Apply(context.Background(), w.GetName(), w, metav1.ApplyOptions{FieldManager: "loadgen"})
				m.record(time.Since(t), err)
			})
			out.emit(m.end(fmt.Sprintf("ssa cr %s items: %s", size.label, phase.name), "apply", int64(size.objects)))
		}
	}
}
