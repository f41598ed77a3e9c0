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
			name: "a paused Deployment rolled out is ready (kubectl rollout status's rule; kstatus never says so)",
			object: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 3}
spec: {replicas: 2, paused: true}
status:
  observedGeneration: 3
  replicas: 2
  updatedReplicas: 2
  readyReplicas: 2
  availableReplicas: 2
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: Unknown, reason: DeploymentPaused, message: Deployment is paused}`,
			wantReady: true, wantReason: "Current",
		},
		{
			name: "a paused Deployment with an old replica left is not ready",
			object: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, generation: 3}
spec: {replicas: 2, paused: true}
status:
  observedGeneration: 3
  replicas: 3
  updatedReplicas: 2
  availableReplicas: 3
  conditions:
  - {type: Progressing, status: Unknown, reason: DeploymentPaused}`,
			wantReason: "ExtraPods", wantMessage: "paused with 1 old replicas pending termination",
		},
		{
			name: "a DaemonSet updated OnDelete, its Pods ready on the old template, is ready",
			object: `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 2}
spec: {updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, desiredNumberScheduled: 3, currentNumberScheduled: 3, numberReady: 3, numberAvailable: 3}`,
			wantReady: true, wantReason: "Current",
		},
		{
			name: "a DaemonSet updated OnDelete with a Pod not ready is not ready",
			object: `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, generation: 2}
spec: {updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, desiredNumberScheduled: 3, currentNumberScheduled: 3, numberReady: 2, numberAvailable: 2}`,
			wantReason: "LessReady", wantMessage: "Ready: 2/3",
		},
		{
			name: "a Job that has failed while its Pods terminate (FailureTarget, not Failed yet) has failed",
			object: `apiVersion: batch/v1
kind: Job
metadata: {name: j}
status:
  startTime: "2026-11-28T00:00:00Z"
  terminating: 1
  conditions:
  - {type: FailureTarget, status: "True", reason: DeadlineExceeded, message: Job was active longer than specified deadline}`,
			wantFailed: true, wantReason: "DeadlineExceeded", wantMessage: "Job was active longer than specified deadline",
		},
		{
			name: "a suspended Job says so",
			object: `apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec: {suspend: true}
status:
  conditions:
  - {type: Suspended, status: "True", reason: JobSuspended, message: Job suspended}`,
			wantReason: "JobSuspended", wantMessage: "the Job is suspended (spec.suspend)",
		},
		{
			name: "a StatefulSet updated RollingUpdate with replicas ready but not available (minReadySeconds) is not ready",
			object: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 3, updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 0}}}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 3, availableReplicas: 1, currentRevision: db-1, updateRevision: db-1}`,
			wantReason: "LessAvailable", wantMessage: "Available: 1/3",
		},
		{
			name: "a StatefulSet updated OnDelete scaling down, a Pod still terminating, is not ready",
			object: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, generation: 2}
spec: {replicas: 2, updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, replicas: 3, readyReplicas: 3, availableReplicas: 3}`,
			wantReason: "ExtraPods", wantMessage: "Pending termination: 1",
		},
		{
			name: "a Pod whose containers crash-loop is not ready, not failed (they restart)",
			object: `apiVersion: v1
kind: Pod
metadata: {name: p}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "False", reason: ContainersNotReady}
  containerStatuses:
  - {name: app, ready: false, restartCount: 3, state: {waiting: {reason: CrashLoopBackOff, message: back-off 40s}}}`,
			wantReason: "ContainerCrashLooping",
		},
		{
			name: "a Pod no node fits yet is not ready, not failed, in the scheduler's words",
			object: `apiVersion: v1
kind: Pod
metadata: {name: p, creationTimestamp: "2026-11-28T00:00:00Z"}
status:
  phase: Pending
  conditions:
  - {type: PodScheduled, status: "False", reason: Unschedulable, message: "0/3 nodes are available: 3 Insufficient cpu.", lastTransitionTime: "2026-11-28T00:00:00Z"}`,
			wantReason: "Unschedulable", wantMessage: "0/3 nodes are available: 3 Insufficient cpu.",
		},
		{
			name: "a custom resource without Ready whose Programmed condition is Unknown is not ready (a Gateway its controller has not programmed)",
			object: `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: g, generation: 1}
status:
  conditions:
  - {type: Accepted, status: Unknown, reason: Pending, message: Waiting for controller}
  - {type: Programmed, status: Unknown, reason: Pending, message: Waiting for controller}`,
			wantReason: "Pending", wantMessage: "Waiting for controller",
		},
		{
			name: "a custom resource without Ready whose Available condition is False is not ready",
			object: `apiVersion: example.com/v1
kind: Cache
metadata: {name: c, generation: 1}
status:
  conditions:
  - {type: Available, status: "False", reason: MinimumReplicasUnavailable}
  - {type: Progressing, status: "True", reason: Rolling}`,
			wantReason: "MinimumReplicasUnavailable", wantMessage: "its Available condition is False",
		},
		{
			name: "a custom resource whose Available condition is True at another generation is not ready",
			object: `apiVersion: example.com/v1
kind: Cache
metadata: {name: c, generation: 3}
status:
  conditions:
  - {type: Available, status: "True", reason: Ok, observedGeneration: 2}`,
			wantReason: "AvailableConditionBehind",
		},
		{
			name: "a nested metacel parent whose child failed has failed",
			object: `apiVersion: example.com/v1
kind: Stack
metadata: {name: s, generation: 1}
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "False", reason: ChildFailed, message: "Job ns/migrate failed: BackoffLimitExceeded", observedGeneration: 1}`,
			wantFailed: true, wantReason: "ChildFailed", wantMessage: "Job ns/migrate failed: BackoffLimitExceeded",
		},
		{
			name: "a Pod that has succeeded is ready, its Ready condition False (PodCompleted)",
			object: `apiVersion: v1
kind: Pod
metadata: {name: migrate}
status:
  phase: Succeeded
  conditions:
  - {type: Ready, status: "False", reason: PodCompleted}`,
			wantReady: true, wantReason: "Current",
		},
		{
			name: "a nested metacel parent whose ChildFailed is of an older generation has not failed (its spec just changed)",
			object: `apiVersion: example.com/v1
kind: Stack
metadata: {name: s, generation: 2}
status:
  observedGeneration: 1
  conditions:
  - {type: Ready, status: "False", reason: ChildFailed, message: "Job ns/migrate failed", observedGeneration: 1}`,
			wantReason: "LatestGenerationNotObserved",
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
