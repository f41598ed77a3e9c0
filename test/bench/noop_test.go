//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/rollout"
)

// The no-op change is a new text of each bench policy, the version the runtime runs (only an
// annotation the runtime does not read differs): a runtime that compares the whole policy takes
// it for a new version whose spec, and so every render, is the same.
func TestTheNoopChangeIsANewTextOfTheSameVersion(t *testing.T) {
	for _, file := range []string{"myapp.yaml", "memcached.yaml"} {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			revised, err := reviseNoop(raw)
			if err != nil {
				t.Fatal(err)
			}
			var before, after policy.CompositePolicy
			if err := yaml.UnmarshalStrict(raw, &before); err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict(revised, &after); err != nil {
				t.Fatalf("the revised policy: %v", err)
			}
			if after.Metadata.Annotations[noopAnnotation] != noopValue || after.Metadata.Name != before.Metadata.Name {
				t.Errorf("metadata: %+v", after.Metadata)
			}
			if !reflect.DeepEqual(before.Spec, after.Spec) {
				t.Error("the spec changed")
			}
			if reflect.DeepEqual(before, after) {
				t.Error("the same text: no change at all")
			}
			if rollout.Version(&policy.Compiled{Policy: &before}) != rollout.Version(&policy.Compiled{Policy: &after}) {
				t.Error("a new version: the runtime would start it and sync every parent")
			}
			if _, err := reviseNoop(revised); err != nil {
				t.Errorf("a revised policy cannot be revised again: %v", err)
			}
			// the policy change that follows still finds its child template's labels
			if _, err := myAppJob.revise(revised); file == "myapp.yaml" && err != nil {
				t.Errorf("the policy change after the no-op one: %v", err)
			}
		})
	}
	if _, err := reviseNoop([]byte("kind: X\nspec: {}\n")); err == nil {
		t.Error("a policy without metadata was revised")
	}
}

// The Kopf-style controller's SIGHUP replaces every Pod: it has no no-op change.
func TestOnlyTheKopfStyleControllerHasNoNoopChange(t *testing.T) {
	for _, ctl := range []string{metacel, handwritten, controllerRuntime} {
		if why := noopNA(ctl); why != "" {
			t.Errorf("%s: %s", ctl, why)
		}
	}
	if noopNA(kopfPython) == "" {
		t.Error("the Kopf-style controller's SIGHUP is taken for a no-op")
	}
}

const metacelMetrics = `# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="myapp",result="success"} 2990
controller_runtime_reconcile_total{controller="myapp",result="error"} 10
controller_runtime_reconcile_total{controller="other",result="success"} 7
workqueue_depth{name="myapp"} 4
metacel_sync_event_latency_seconds_bucket{policy="myapp",source="parent",le="0.001"} 100
metacel_sync_event_latency_seconds_count{policy="myapp",source="parent"} 1500
metacel_sync_event_latency_seconds_count{policy="myapp",source="child"} 500
metacel_policy_info{generation="2",policy="myapp",source="myapp.yaml"} 1
metacel_policy_info{generation="5",policy="other",source="other.yaml"} 1
`

// A controller's progress: its syncs, queue, and metacel's syncs of an event and generation.
func TestProgressIsReadFromTheMetrics(t *testing.T) {
	got, err := progressOf(metacelMetrics, metacel, "myapp")
	if err != nil {
		t.Fatal(err)
	}
	if want := (progress{syncs: 3000, events: 2000, depth: 4, generation: "2"}); got != want {
		t.Errorf("metacel: %+v, want %+v", got, want)
	}
	got, err = progressOf(metacelMetrics, handwritten, "myapp")
	if err != nil || got != (progress{syncs: 3000, depth: 4}) {
		t.Errorf("another controller: %+v, %v (no events, no generation read)", got, err)
	}
	if _, err := progressOf("controller_runtime_reconcile_total{controller=\"myapp\"} 1\n", metacel, "myapp"); err == nil {
		t.Error("no queue depth, and no error")
	}
	if l := sampleLabels(metacelMetrics, "metacel_policy_info", map[string]string{"policy": "none"}); l != nil {
		t.Errorf("labels of no sample: %v", l)
	}
}

// Every parent is decided once the queue is empty and the syncs have grown by the parents;
// metacel's also by syncs of an event, under its policy's next generation, unless it took the
// change for the version it runs.
func TestEveryParentIsDecidedOnceSyncedAfterTheChange(t *testing.T) {
	from := progress{syncs: 1000, events: 1000, generation: "1"}
	tests := []struct {
		name string
		kind string
		now  progress
		want bool
	}{
		{"metacel: the new version synced every parent", metacel, progress{syncs: 2000, events: 2000, generation: "2"}, true},
		{"metacel: its queue is not empty", metacel, progress{syncs: 2000, events: 2000, depth: 1, generation: "2"}, false},
		{"metacel: a resync of the old version", metacel, progress{syncs: 2000, events: 1000, generation: "1"}, false},
		{"metacel: not reloaded", metacel, progress{syncs: 2000, events: 2000, generation: "1"}, false},
		{"metacel: one parent short", metacel, progress{syncs: 1999, events: 1999, generation: "2"}, false},
		{"metacel: the load found the running version, nothing to sync", metacel, progress{syncs: 1000, events: 1000, generation: "1", sameVersionLoads: 1}, true},
		{"a baseline synced every parent", handwritten, progress{syncs: 2000}, true},
		{"a baseline short of one", controllerRuntime, progress{syncs: 1999}, false},
		{"a baseline's queue not empty", controllerRuntime, progress{syncs: 2500, depth: 3}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decidedAll(tt.kind, from, tt.now, 1000); got != tt.want {
				t.Errorf("decidedAll = %v, want %v", got, tt.want)
			}
		})
	}
}
