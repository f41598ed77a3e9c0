package readiness

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/projection"
)

// withUnread is obj with a field no judge reads, which a projection drops: the test would pass
// trivially if Map kept everything.
func withUnread(obj map[string]any) map[string]any {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	spec["unreadByReadiness"] = true
	obj["spec"] = spec
	return obj
}

func TestAKindSaysWhenItsObjectIsReady(t *testing.T) {
	tests := []struct {
		name        string
		kind        Kind
		object      string
		wantReady   bool
		wantFailed  bool
		wantReason  string
		wantMessage string
	}{
		{
			name:      "a Secret is ready once it exists",
			object:    "apiVersion: v1\nkind: Secret\nmetadata: {name: s}",
			wantReady: true, wantReason: "Current",
		},
		{
			name: "a Deployment with no replica available is not ready",
			object: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, updatedReplicas: 2, readyReplicas: 0, availableReplicas: 0}`,
			wantReason: "LessAvailable", wantMessage: "Available: 0/2",
		},
		{
			name: "a Deployment not yet observed at its generation is not ready",
			object: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 2}
spec: {replicas: 1}
status: {observedGeneration: 1, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1}`,
			wantReason: "LatestGenerationNotObserved",
		},
		{
			name: "a Deployment rolled out at its generation is ready",
			object: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 2}
spec: {replicas: 1}
status:
  observedGeneration: 2
  replicas: 1
  updatedReplicas: 1
  readyReplicas: 1
  availableReplicas: 1
  conditions:
  - {type: Available, status: "True"}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}`,
			wantReady: true, wantReason: "Current",
		},
		{
			name: "a Deployment past its progress deadline has failed",
			object: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 1}
spec: {replicas: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: 'ReplicaSet "d-1" has timed out progressing.'}`,
			wantFailed: true, wantReason: "ProgressDeadlineExceeded", wantMessage: `ReplicaSet "d-1" has timed out progressing.`,
		},
		{
			name: "a Job still running is not ready",
			object: `apiVersion: batch/v1
kind: Job
metadata: {name: j}
status: {startTime: "2026-11-28T00:00:00Z", active: 1}`,
			wantReason: "JobRunning", wantMessage: "the Job has not completed (active 1, succeeded 0)",
		},
		{
			name: "a completed Job is ready",
			object: `apiVersion: batch/v1
kind: Job
metadata: {name: j}
status:
  startTime: "2026-11-28T00:00:00Z"
  succeeded: 1
  conditions:
  - {type: SuccessCriteriaMet, status: "True"}
  - {type: Complete, status: "True"}`,
			wantReady: true, wantReason: "Current",
		},
		{
			name: "a failed Job has failed, in the Job's words",
			object: `apiVersion: batch/v1
kind: Job
metadata: {name: j}
status:
  startTime: "2026-11-28T00:00:00Z"
  failed: 1
  conditions:
  - {type: FailureTarget, status: "True", reason: DeadlineExceeded}
  - {type: Failed, status: "True", reason: DeadlineExceeded, message: Job was active longer than specified deadline}`,
			wantFailed: true, wantReason: "DeadlineExceeded", wantMessage: "Job was active longer than specified deadline",
		},
		{
			name:       "a claim not yet bound is not ready",
			object:     "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nstatus: {phase: Pending}",
			wantReason: "NotBound",
		},
		{
			name:      "a bound claim is ready",
			object:    "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nstatus: {phase: Bound}",
			wantReady: true, wantReason: "Current",
		},
		{
			name: "a Pod not ready is not ready",
			object: `apiVersion: v1
kind: Pod
metadata: {name: p}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "False", reason: ContainersNotReady}`,
			wantReason: "PodRunningNotReady",
		},
		{
			name:       "a Pod that failed has failed",
			object:     "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Failed, reason: Evicted, message: The node was low on memory.}",
			wantFailed: true, wantReason: "Evicted", wantMessage: "The node was low on memory.",
		},
		{
			name:      "a Pod that succeeded is ready",
			object:    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Succeeded}",
			wantReady: true, wantReason: "Current",
		},
		{
			name: "a custom resource whose Ready condition is False is not ready, in its words",
			object: `apiVersion: example.com/v1
kind: App
metadata: {name: a, generation: 1}
status:
  conditions:
  - {type: Ready, status: "False", reason: NotReady, message: waiting for Deployment default/a, observedGeneration: 1}`,
			wantReason: "NotReady", wantMessage: "waiting for Deployment default/a",
		},
		{
			name: "a custom resource Ready at its generation is ready",
			object: `apiVersion: example.com/v1
kind: App
metadata: {name: a, generation: 3}
status:
  conditions:
  - {type: Ready, status: "True", reason: Ready, observedGeneration: 3}`,
			wantReady: true, wantReason: "Current",
		},
		{
			name: "a custom resource Ready at an older generation is not ready",
			object: `apiVersion: example.com/v1
kind: App
metadata: {name: a, generation: 3}
status:
  conditions:
  - {type: Ready, status: "True", reason: Ready, observedGeneration: 2}`,
			wantReason: "ReadyConditionBehind", wantMessage: "its Ready condition is of generation 2, and the object is at generation 3",
		},
		{
			name:       "a custom resource of a kind that reports conditions, before it reports any, is not ready",
			kind:       Kind{ReportsConditions: true},
			object:     "apiVersion: example.com/v1\nkind: App\nmetadata: {name: a, generation: 1}",
			wantReason: "NoConditions", wantMessage: "its controller has reported no conditions yet",
		},
		{
			name:      "a custom resource of a kind without conditions is ready once it exists",
			object:    "apiVersion: example.com/v1\nkind: Config\nmetadata: {name: a, generation: 1}",
			wantReady: true, wantReason: "Current",
		},
		{
			name: "a Stalled custom resource has failed",
			object: `apiVersion: example.com/v1
kind: App
metadata: {name: a, generation: 1}
status:
  conditions:
  - {type: Stalled, status: "True", reason: InvalidSpec, message: spec.size is too large}`,
			wantFailed: true, wantReason: "InvalidSpec", wantMessage: "spec.size is too large",
		},
		{
			name: "a StatefulSet updated OnDelete with no replica ready is not ready",
			object: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 1}
spec: {replicas: 3, updateStrategy: {type: OnDelete}}
status: {observedGeneration: 1, replicas: 3, readyReplicas: 0}`,
			wantReason: "LessReady", wantMessage: "Ready: 0/3",
		},
		{
			name: "a StatefulSet updated OnDelete not yet observed at its generation is not ready",
			object: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 1, updateStrategy: {type: OnDelete}}
status: {observedGeneration: 1, replicas: 1, readyReplicas: 1, availableReplicas: 1}`,
			wantReason: "LatestGenerationNotObserved",
		},
		{
			name: "a StatefulSet updated OnDelete with every replica ready and available is ready",
			object: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 3, updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, availableReplicas: 3, updatedReplicas: 0}`,
			wantReady: true, wantReason: "Current",
		},
		{
			name: "a Service of type LoadBalancer without an address is not ready",
			object: `apiVersion: v1
kind: Service
metadata: {name: web}
spec: {type: LoadBalancer, clusterIP: 10.0.0.1, ports: [{port: 80}]}
status: {loadBalancer: {}}`,
			wantReason: "LoadBalancerPending",
		},
		{
			name: "a Service of type LoadBalancer with an address is ready",
			object: `apiVersion: v1
kind: Service
metadata: {name: web}
spec: {type: LoadBalancer, clusterIP: 10.0.0.1, ports: [{port: 80}]}
status: {loadBalancer: {ingress: [{ip: 192.0.2.10}]}}`,
			wantReady: true, wantReason: "Current",
		},
		{
			name:       "an object being deleted is not ready",
			object:     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, deletionTimestamp: \"2026-11-28T00:00:00Z\"}",
			wantReason: "Terminating",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			js, err := yaml.YAMLToJSON([]byte(tc.object))
			if err != nil {
				t.Fatal(err)
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(js); err != nil {
				t.Fatal(err)
			}
			got := Of(obj, tc.kind)
			if got.Ready != tc.wantReady || got.Failed != tc.wantFailed || got.Reason != tc.wantReason {
				t.Errorf("Of() = %+v, want ready %v, failed %v, reason %q", got, tc.wantReady, tc.wantFailed, tc.wantReason)
			}
			if tc.wantMessage != "" && got.Message != tc.wantMessage {
				t.Errorf("message %q, want %q", got.Message, tc.wantMessage)
			}
			// a cache that keeps only Fields of a child judges it the same
			projected := &unstructured.Unstructured{Object: projection.Map(withUnread(obj.Object), Fields())}
			if p := Of(projected, tc.kind); p != got {
				t.Errorf("Of() of the fields kept = %+v, of the whole object %+v", p, got)
			}
		})
	}
}
