package clientgo

import (
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// conflictCause returns the FieldManagerConflict cause of an apply's 409 naming field, failing t
// when err is not such a conflict.
func conflictCause(t *testing.T, err error, field string) metav1.StatusCause {
	t.Helper()
	if !apierrors.IsConflict(err) {
		t.Fatalf("want a 409 Conflict, got %v", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("the conflict carries no details: %#v", err)
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type == metav1.CauseTypeFieldManagerConflict && c.Field == field {
			return c
		}
	}
	t.Fatalf("no FieldManagerConflict cause on %s in %+v", field, status.Status().Details.Causes)
	return metav1.StatusCause{}
}

// TestServerSideApplyConflictAndForce applies typed apply configurations (a ConfigMap in JSON, a
// Deployment in protobuf) as two managers: the second one's change of a field the first owns is
// a 409 whose cause names the field and the manager; with Force it takes the field over, as
// managedFields (read back with client-go's Extract functions) show.
func TestServerSideApplyConflictAndForce(t *testing.T) {
	for _, ct := range []string{jsonCT, protobuf} {
		t.Run(strings.TrimPrefix(ct, "application/"), func(t *testing.T) {
			srv := startServer(t)
			cfg, rec := srv.config(t, ct)
			client := kubernetes.NewForConfigOrDie(cfg)
			ctx := t.Context()
			cms := client.CoreV1().ConfigMaps("default")

			alpha := corev1ac.ConfigMap("settings", "default").
				WithLabels(map[string]string{"owner": "alpha"}).
				WithData(map[string]string{"shared": "from-alpha", "alpha-only": "1"})
			created, err := cms.Apply(ctx, alpha, metav1.ApplyOptions{FieldManager: "alpha"})
			if err != nil {
				t.Fatal(err)
			}
			if created.Data["shared"] != "from-alpha" || created.Labels["owner"] != "alpha" {
				t.Fatalf("the first apply made %+v", created)
			}
			if got := rec.matching("PATCH", "/configmaps/settings"); len(got) != 1 || got[0].Status != 201 ||
				!strings.HasPrefix(got[0].ContentType, "application/apply-patch+yaml") {
				t.Fatalf("the first apply (a create) was %+v, want a 201 to an apply patch", got)
			}

			// beta sets a field alpha owns to another value: refused, naming alpha and the field.
			beta := corev1ac.ConfigMap("settings", "default").WithData(map[string]string{"shared": "from-beta", "beta-only": "2"})
			_, err = cms.Apply(ctx, beta, metav1.ApplyOptions{FieldManager: "beta"})
			cause := conflictCause(t, err, ".data.shared")
			if !strings.Contains(cause.Message, `conflict with "alpha"`) {
				t.Fatalf("the cause does not name the manager: %+v", cause)
			}
			if !strings.Contains(err.Error(), "Apply failed with 1 conflict") {
				t.Fatalf("the message is not apply's: %v", err)
			}
			unchanged, err := cms.Get(ctx, "settings", metav1.GetOptions{})
			if err != nil || unchanged.ResourceVersion != created.ResourceVersion {
				t.Fatalf("a refused apply changed the object: %v %v", unchanged, err)
			}

			// With Force, beta takes the field over; alpha keeps the rest.
			forced, err := cms.Apply(ctx, beta, metav1.ApplyOptions{FieldManager: "beta", Force: true})
			if err != nil {
				t.Fatal(err)
			}
			if forced.Data["shared"] != "from-beta" || forced.Data["alpha-only"] != "1" || forced.Data["beta-only"] != "2" {
				t.Fatalf("after the forced apply: %v", forced.Data)
			}
			ofAlpha, err := corev1ac.ExtractConfigMap(forced, "alpha")
			if err != nil {
				t.Fatal(err)
			}
			ofBeta, err := corev1ac.ExtractConfigMap(forced, "beta")
			if err != nil {
				t.Fatal(err)
			}
			if _, has := ofAlpha.Data["shared"]; has || ofAlpha.Data["alpha-only"] != "1" || ofAlpha.Labels["owner"] != "alpha" {
				t.Fatalf("alpha's fields after beta forced: %+v", ofAlpha)
			}
			if ofBeta.Data["shared"] != "from-beta" || ofBeta.Data["beta-only"] != "2" {
				t.Fatalf("beta's fields after it forced: %+v", ofBeta)
			}
			for _, e := range forced.ManagedFields {
				if e.Operation != metav1.ManagedFieldsOperationApply {
					t.Fatalf("an applied object has a managedFields entry %+v", e)
				}
			}

			// alpha re-applies without the field it lost: nothing of beta's goes, no conflict.
			again := corev1ac.ConfigMap("settings", "default").WithLabels(map[string]string{"owner": "alpha"}).
				WithData(map[string]string{"alpha-only": "1"})
			after, err := cms.Apply(ctx, again, metav1.ApplyOptions{FieldManager: "alpha"})
			if err != nil || after.Data["shared"] != "from-beta" {
				t.Fatalf("alpha's re-apply: %v %v", after, err)
			}

			// A Deployment: the same through apps/v1 apply configurations.
			deps := client.AppsV1().Deployments("default")
			sel := map[string]string{"app": "api"}
			dep := appsv1ac.Deployment("api", "default").WithSpec(appsv1ac.DeploymentSpec().
				WithReplicas(2).
				WithSelector(metav1ac.LabelSelector().WithMatchLabels(sel)).
				WithTemplate(corev1ac.PodTemplateSpec().WithLabels(sel).WithSpec(corev1ac.PodSpec().
					WithContainers(corev1ac.Container().WithName("api").WithImage("api:1").
						WithPorts(corev1ac.ContainerPort().WithContainerPort(8080))))))
			if _, err := deps.Apply(ctx, dep, metav1.ApplyOptions{FieldManager: "deployer"}); err != nil {
				t.Fatal(err)
			}
			scaler := appsv1ac.Deployment("api", "default").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(7))
			_, err = deps.Apply(ctx, scaler, metav1.ApplyOptions{FieldManager: "autoscaler"})
			if c := conflictCause(t, err, ".spec.replicas"); !strings.Contains(c.Message, `conflict with "deployer"`) {
				t.Fatalf("the cause does not name the manager: %+v", c)
			}
			// Another container's image: the list is a map keyed by name, so it is the
			// container named api that conflicts.
			imager := appsv1ac.Deployment("api", "default").WithSpec(appsv1ac.DeploymentSpec().
				WithTemplate(corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
					WithContainers(corev1ac.Container().WithName("api").WithImage("api:2")))))
			_, err = deps.Apply(ctx, imager, metav1.ApplyOptions{FieldManager: "imager"})
			conflictCause(t, err, `.spec.template.spec.containers[name="api"].image`)

			scaled, err := deps.Apply(ctx, scaler, metav1.ApplyOptions{FieldManager: "autoscaler", Force: true})
			if err != nil {
				t.Fatal(err)
			}
			if *scaled.Spec.Replicas != 7 || scaled.Spec.Template.Spec.Containers[0].Image != "api:1" {
				t.Fatalf("after the forced scale: %+v", scaled.Spec)
			}
			checkOwner(t, scaled, "autoscaler", true)
			checkOwner(t, scaled, "deployer", false)
			if len(rec.matching("PATCH", "/deployments/api")) != 4 {
				t.Fatalf("want the four applies of the Deployment, got %+v", rec.matching("PATCH", "/deployments/api"))
			}
			for _, e := range rec.matching("PATCH", "/deployments/api") {
				if e.Status < 300 && !strings.HasPrefix(e.RespContentType, ct) {
					t.Fatalf("an apply answered %q, want %s", e.RespContentType, ct)
				}
			}
		})
	}
}

// checkOwner asserts whether manager owns spec.replicas of d, read from its managedFields.
func checkOwner(t *testing.T, d *appsv1.Deployment, manager string, owns bool) {
	t.Helper()
	ac, err := appsv1ac.ExtractDeployment(d, manager)
	if err != nil {
		t.Fatal(err)
	}
	got := ac.Spec != nil && ac.Spec.Replicas != nil
	if got != owns {
		t.Fatalf("%s owns spec.replicas: %v, want %v (managedFields %+v)", manager, got, owns, d.ManagedFields)
	}
}
