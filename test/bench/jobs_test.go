//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The Memcached policy's change puts the label on the Deployment itself, where the
// controller-runtime baseline puts the labels of its --child-labels file, and nowhere else (its
// selector and Pod template keep theirs: a selector cannot change).
func TestTheMemcachedChangeLabelsTheDeployment(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "memcached.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	changed, err := memcachedJob.revise(raw)
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Spec struct {
			ResyncPeriodSeconds int `json:"resyncPeriodSeconds"`
			Children            []struct {
				Template struct {
					Metadata struct {
						Name   string            `json:"name"`
						Labels map[string]string `json:"labels"`
					} `json:"metadata"`
					Spec map[string]any `json:"spec"`
				} `json:"template"`
			} `json:"children"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(changed, &policy); err != nil {
		t.Fatalf("the revised policy is not YAML: %v", err)
	}
	if len(policy.Spec.Children) != 1 || policy.Spec.ResyncPeriodSeconds == 0 {
		t.Fatalf("%d children, resync %d", len(policy.Spec.Children), policy.Spec.ResyncPeriodSeconds)
	}
	meta := policy.Spec.Children[0].Template.Metadata
	if meta.Name == "" || len(meta.Labels) != 1 || meta.Labels[revisionLabel] != revisionValue {
		t.Errorf("the Deployment's metadata: %+v", meta)
	}
}

// A Memcached is converged once its Deployment has the size and its Available condition is set,
// as the controller-runtime baseline writes it; metacel's also has Synced True.
func TestAMemcachedIsDoneWithItsAvailableCondition(t *testing.T) {
	withConditions := func(conds ...map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		list := make([]any, len(conds))
		for i, c := range conds {
			list[i] = c
		}
		_ = unstructured.SetNestedSlice(u.Object, list, "status", "conditions")
		return u
	}
	available := map[string]any{"type": "Available", "status": "False"}
	synced := map[string]any{"type": "Synced", "status": "True"}
	for _, tt := range []struct {
		name string
		u    *unstructured.Unstructured
		ctl  string
		want bool
	}{
		{"no status", withConditions(), controllerRuntime, false},
		{"Available, by controller-runtime", withConditions(available), controllerRuntime, true},
		{"Available, by metacel, not Synced", withConditions(available), metacel, false},
		{"Available and Synced, by metacel", withConditions(available, synced), metacel, true},
	} {
		if got := memcachedJob.isDone(tt.ctl)(tt.u); got != tt.want {
			t.Errorf("%s: done %v, want %v", tt.name, got, tt.want)
		}
	}
	dep := func(replicas int32, labels map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "app-00001", Labels: labels}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}}
	}
	if name, ok, _ := deploymentChild.state(dep(memcachedSize, nil)); name != "app-00001" || !ok {
		t.Errorf("a Deployment of the size: %q, %v", name, ok)
	}
	if _, ok, _ := deploymentChild.state(dep(1, nil)); ok {
		t.Error("a Deployment of another size counts")
	}
	if _, created, _ := deploymentChild.changed(dep(memcachedSize, map[string]string{revisionLabel: revisionValue}), false); !created {
		t.Error("a Deployment with the label is not changed")
	}
}

// -configs frameworks names the three baselines, each beside metacel, the baseline first.
func TestFrameworksNamesTheThreeBaselines(t *testing.T) {
	names := expandConfigs([]string{"unthrottled", frameworksConfig})
	want := []string{"unthrottled", "myapp-controller-runtime", "memcached-controller-runtime", "myapp-kopf"}
	if !slices.Equal(names, want) {
		t.Fatalf("configs %v, want %v", names, want)
	}
	selected := selectConfigs(configurations("?"), names)
	if len(selected) != len(want) {
		t.Fatalf("%d configurations selected", len(selected))
	}
	baselines := map[string][]string{}
	for _, c := range selected {
		baselines[c.name] = c.controllers()
	}
	if got := baselines["unthrottled"]; !slices.Equal(got, []string{handwritten, metacel}) {
		t.Errorf("unthrottled runs %v", got)
	}
	if got := baselines["memcached-controller-runtime"]; !slices.Equal(got, []string{controllerRuntime, metacel}) {
		t.Errorf("memcached-controller-runtime runs %v", got)
	}
	if got := baselines["myapp-kopf"]; !slices.Equal(got, []string{kopfPython, metacel}) {
		t.Errorf("myapp-kopf runs %v", got)
	}
	if jobs := jobsOf(selected); len(jobs) != 2 || jobs[0] != myAppJob || jobs[1] != memcachedJob {
		t.Errorf("jobs %v", jobs)
	}
}
