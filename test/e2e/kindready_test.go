//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Children with no readyWhen are ready when their kinds say so: a Job once it has completed, a
// Deployment once its replicas are available. A Job that fails (its Pod never scheduled, past its
// deadline) makes its parent Ready=False with the Job's reason, and the Deployment with no
// replica available is named among what the parent waits for.
func TestAChildIsReadyWhenItsKindSaysSo(t *testing.T) {
	startRuntime(t, filepath.Join("testdata", "policies", "kindready"))
	ns := newNamespace(t, "kindready")
	widget := func(name, color string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "e2e.metacel.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"color": color},
		}}
	}
	create(t, widgetsGVR, widget("runs", "kwok"))
	create(t, widgetsGVR, widget("stuck", "none"))

	waitFor(t, widgetsGVR, ns, "runs", 2*wait, hasCondition("Ready", "True", "ChildrenReady", "2 children ready"))
	job := waitFor(t, jobsGVR, ns, "runs-once", wait, nil)
	// the job controller sets SuccessCriteriaMet once the Job has succeeded, and Complete once its
	// Pods have terminated too: either says the Job has done its work
	if c, m := condition(job, "Complete"), condition(job, "SuccessCriteriaMet"); (c == nil || c["status"] != "True") && (m == nil || m["status"] != "True") {
		t.Errorf("the parent is Ready but its Job has not succeeded: status %v", job.Object["status"])
	}
	app := waitFor(t, deploymentsGVR, ns, "runs-app", wait, nil)
	if n, _, _ := unstructured.NestedInt64(app.Object, "status", "availableReplicas"); n != 1 {
		t.Errorf("the parent is Ready but its Deployment has %d replicas available, want 1", n)
	}

	waitFor(t, widgetsGVR, ns, "stuck", 2*wait, func(w *unstructured.Unstructured) error {
		if err := hasCondition("Ready", "False", "ChildFailed", "")(w); err != nil {
			return err
		}
		msg, _ := condition(w, "Ready")["message"].(string)
		for _, want := range []string{"Job " + ns + "/stuck-once failed", "DeadlineExceeded", "Deployment " + ns + "/stuck-app"} {
			if !strings.Contains(msg, want) {
				return fmt.Errorf("Ready message %q does not say %q", msg, want)
			}
		}
		return nil
	})
	waitFor(t, widgetsGVR, ns, "stuck", wait, hasCondition("Synced", "True", "", ""))
}

// A parent whose only child waits for a related Secret (its includeWhen false) is not Ready and
// says what left the child out; the policy's own condition says what it waits for. Once the
// Secret exists, the child is created and the parent is Ready, the condition True.
func TestAParentWithNoChildIncludedIsNotReadyAndSaysWhy(t *testing.T) {
	startRuntime(t, filepath.Join("testdata", "policies", "waiting"))
	ns := newNamespace(t, "waiting")
	create(t, widgetsGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "u", "namespace": ns},
	}})
	waitFor(t, widgetsGVR, ns, "u", wait, func(w *unstructured.Unstructured) error {
		if err := hasCondition("Ready", "False", "NoChildIncluded",
			`no child is included (grant: includeWhen "has(related.password)" is false): set spec.readyWhen to say when the parent is ready without children`)(w); err != nil {
			return err
		}
		return hasCondition("PasswordFound", "False", "WaitingForSecret", "Secret u-password")(w)
	})
	create(t, secretsGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "u-password", "namespace": ns},
		"stringData": map[string]any{"password": "s3cret"},
	}})
	waitFor(t, configMapsGVR, ns, "u-grant", wait, nil)
	waitFor(t, widgetsGVR, ns, "u", wait, func(w *unstructured.Unstructured) error {
		if err := hasCondition("Ready", "True", "ChildrenReady", "1 child ready")(w); err != nil {
			return err
		}
		return hasCondition("PasswordFound", "True", "SecretFound", "Secret u-password")(w)
	})
}
