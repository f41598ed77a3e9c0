//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/operator"
)

// suspendedJobPolicy makes, for each Widget labelled for ns, a Job created suspended whose pods
// are scheduled on the nodes of the Widget's color.
const suspendedJobPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: suspended-%[1]s
spec:
  parentResource:
    apiVersion: e2e.metacel.dev/v1
    resource: widgets
    labelSelector: {matchLabels: {e2e.metacel.dev/test: %[1]s}}
  childResources:
    - {apiVersion: batch/v1, resource: jobs}
  children:
    - id: job
      template:
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: "${parent.metadata.name}-job"
        spec:
          suspend: true
          template:
            spec:
              restartPolicy: Never
              nodeSelector: {color: "${parent.spec.color}"}
              containers: [{name: c, image: busybox}]
      readyWhen: 'true'
`

// TestASuspendedJobTakesANewNodeSelector: the API server lets the scheduling directives of a Job
// suspended that never started change (a queueing system places it before it starts); a policy
// that changes its nodeSelector updates the Job in place, where the rest of its template is
// immutable.
func TestASuspendedJobTakesANewNodeSelector(t *testing.T) {
	ns := newNamespace(t, "suspended")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), fmt.Appendf(nil, suspendedJobPolicy, ns), 0o644); err != nil {
		t.Fatal(err)
	}
	startRuntimeWith(t, operator.Options{PolicyDirs: []string{dir}})
	w := widget(ns, "w")
	w.SetLabels(map[string]string{"e2e.metacel.dev/test": ns})
	create(t, widgetsGVR, w)
	nodeSelector := func(color string) func(*unstructured.Unstructured) error {
		return func(job *unstructured.Unstructured) error {
			if got := str(job, "spec", "template", "spec", "nodeSelector", "color"); got != color {
				return fmt.Errorf("nodeSelector color %q, want %q", got, color)
			}
			return nil
		}
	}
	before := waitFor(t, jobsGVR, ns, "w-job", wait, nodeSelector("blue"))
	patch(t, widgetsGVR, ns, "w", `{"spec":{"color":"red"}}`)
	after := waitFor(t, jobsGVR, ns, "w-job", wait, nodeSelector("red"))
	if after.GetUID() != before.GetUID() {
		t.Errorf("the Job was replaced (UID %s, then %s), not updated", before.GetUID(), after.GetUID())
	}
	waitFor(t, widgetsGVR, ns, "w", wait, hasCondition("Synced", "True", "", ""))
}
