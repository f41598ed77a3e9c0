//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The two controllers are told the same change: the label metacel's revised policy puts on its
// Pod template is the one the hand-written controller's --pod-labels file holds.
func TestBothControllersAreToldTheSameLabel(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "myapp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	changed, err := myAppJob.revise(raw)
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Spec struct {
			Children []struct {
				Template struct {
					Metadata struct {
						Labels map[string]string `json:"labels"`
					} `json:"metadata"`
				} `json:"template"`
			} `json:"children"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(changed, &policy); err != nil {
		t.Fatalf("the revised policy is not YAML: %v", err)
	}
	if len(policy.Spec.Children) != 1 {
		t.Fatalf("%d children", len(policy.Spec.Children))
	}
	metacelLabels := policy.Spec.Children[0].Template.Metadata.Labels
	if metacelLabels[revisionLabel] != revisionValue || metacelLabels["app"] == "" {
		t.Errorf("metacel's Pod template labels: %v", metacelLabels)
	}
	file, err := podLabelsFile(map[string]string{revisionLabel: revisionValue})
	if err != nil {
		t.Fatal(err)
	}
	var handLabels map[string]string
	if err := yaml.UnmarshalStrict(file, &handLabels); err != nil || len(handLabels) != 1 || handLabels[revisionLabel] != metacelLabels[revisionLabel] {
		t.Errorf("the hand-written controller's labels %v (%v), metacel's %v", handLabels, err, metacelLabels)
	}
	// before the change, the hand-written controller's file holds no label
	empty, err := podLabelsFile(nil)
	if err != nil {
		t.Fatal(err)
	}
	var none map[string]string
	if err := yaml.UnmarshalStrict(empty, &none); err != nil || len(none) != 0 {
		t.Errorf("no labels: %q", empty)
	}
	if _, err := myAppJob.revise(changed); err != nil {
		t.Errorf("a revised policy cannot be revised again: %v", err)
	}
}

func podFor(name string, labels map[string]string, node string, phase corev1.PodPhase, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

// A Pod is created anew once it carries the label and is not being deleted; it is replaced then
// too, but on a cluster with nodes only once it is also bound and Running.
func TestAPodIsReplacedOnceItCarriesTheLabelAndWithNodesRuns(t *testing.T) {
	labelled := map[string]string{revisionLabel: revisionValue, "app": "a"}
	tests := []struct {
		name                    string
		pod                     *corev1.Pod
		nodes                   bool
		wantCreated, wantReplac bool
	}{
		{"the old Pod", podFor("a-pod", map[string]string{"app": "a"}, "n", corev1.PodRunning, false), true, false, false},
		{"the old Pod, no nodes", podFor("a-pod", map[string]string{"app": "a"}, "", corev1.PodPending, false), false, false, false},
		{"another revision", podFor("a-pod", map[string]string{revisionLabel: "3"}, "n", corev1.PodRunning, false), true, false, false},
		{"new, pending, no nodes", podFor("a-pod", labelled, "", corev1.PodPending, false), false, true, true},
		{"new, pending", podFor("a-pod", labelled, "", corev1.PodPending, false), true, true, false},
		{"new, bound, pending", podFor("a-pod", labelled, "n", corev1.PodPending, false), true, true, false},
		{"new, bound and Running", podFor("a-pod", labelled, "n", corev1.PodRunning, false), true, true, true},
		{"new, being deleted", podFor("a-pod", labelled, "n", corev1.PodRunning, true), true, false, false},
		{"new, being deleted, no nodes", podFor("a-pod", labelled, "", corev1.PodPending, true), false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			created, replaced := podState(tt.pod, tt.nodes)
			if created != tt.wantCreated || replaced != tt.wantReplac {
				t.Errorf("created %v, replaced %v; want %v, %v", created, replaced, tt.wantCreated, tt.wantReplac)
			}
		})
	}
}

// The change's times: the first Pod replaced, every Pod created anew, every Pod replaced, each
// Pod counted once however many updates it goes through; the old Pods count for nothing.
func TestAChangeTimesTheFirstAndEveryPod(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	labelled := map[string]string{revisionLabel: revisionValue}
	r := newReplacements(podChild, 2, true)
	r.see(podFor("a-pod", nil, "n", corev1.PodRunning, false), at(1))      // old
	r.see(podFor("a-pod", nil, "n", corev1.PodRunning, true), at(2))       // old, going
	r.see(podFor("a-pod", labelled, "", corev1.PodPending, false), at(3))  // created anew
	r.see(podFor("b-pod", labelled, "", corev1.PodPending, false), at(4))  // every Pod created anew
	r.see(podFor("a-pod", labelled, "n", corev1.PodPending, false), at(5)) // bound
	r.see(podFor("a-pod", labelled, "n", corev1.PodRunning, false), at(6)) // the first replaced
	r.see(podFor("a-pod", labelled, "n", corev1.PodRunning, false), at(7)) // again: counted once
	select {
	case <-r.all:
		t.Fatal("every Pod replaced with one of two")
	default:
	}
	r.see(podFor("b-pod", labelled, "n", corev1.PodRunning, false), at(8)) // every Pod replaced
	select {
	case <-r.all:
	default:
		t.Fatal("every Pod replaced, not reported")
	}
	if !r.first.Equal(at(6)) || !r.allCreated.Equal(at(4)) || !r.allReady.Equal(at(8)) {
		t.Errorf("first %v, every created %v, every replaced %v; want 6, 4, 8", r.first.Sub(t0), r.allCreated.Sub(t0), r.allReady.Sub(t0))
	}
	r.see(podFor("c-pod", labelled, "n", corev1.PodRunning, false), at(9)) // more than want: no second close
	if got := r.state(); got != "3 of 2 Pods created anew, 3 replaced" {
		t.Errorf("state %q", got)
	}

	// without nodes a Pod is replaced as soon as it is created anew
	r = newReplacements(podChild, 1, false)
	r.see(podFor("a-pod", labelled, "", corev1.PodPending, false), at(3))
	if !r.first.Equal(at(3)) || !r.allCreated.Equal(at(3)) || !r.allReady.Equal(at(3)) {
		t.Errorf("no nodes: first %v, every created %v, every replaced %v; want 3, 3, 3", r.first.Sub(t0), r.allCreated.Sub(t0), r.allReady.Sub(t0))
	}
}

// The tracker of the burst closes allRunning once every expected Pod is bound and Running, and
// not before; a Pod that stops running (deleted) counts no more.
func TestTheBurstIsRunningOnceEveryPodIsBoundAndRunning(t *testing.T) {
	tr := &tracker{child: podChild, want: 2, parents: map[string]bool{}, pods: map[string]bool{}, running: map[string]bool{},
		expected: func(p string) bool { return p != "other-pod" }, done: make(chan struct{}), allRunning: make(chan struct{})}
	closed := func() bool {
		select {
		case <-tr.allRunning:
			return true
		default:
			return false
		}
	}
	tr.pod(podFor("a-pod", nil, "n", corev1.PodRunning, false), true)
	tr.pod(podFor("other-pod", nil, "n", corev1.PodRunning, false), true) // not one of the parents'
	tr.pod(podFor("b-pod", nil, "n", corev1.PodPending, false), true)
	tr.pod(podFor("a-pod", nil, "n", corev1.PodRunning, false), false) // deleted
	tr.pod(podFor("b-pod", nil, "n", corev1.PodRunning, false), true)
	if closed() {
		t.Fatalf("all Running with %v", tr.running)
	}
	tr.pod(podFor("a-pod", nil, "n", corev1.PodRunning, false), true)
	if !closed() || tr.runningAt.IsZero() {
		t.Fatal("every Pod Running, not reported")
	}
	if got := tr.state(); !strings.HasSuffix(got, "2 Pods, 2 bound and Running") {
		t.Errorf("state %q", got)
	}
}

// Both controllers' changes are in one table, metacel's beside the hand-written controller's of
// the same configuration with its ratio; on a cluster with nodes the burst's time until every
// Pod was Running is beside them.
func TestTheChangeTableSetsMetacelBesideTheHandWritten(t *testing.T) {
	pods := counts{{Verb: "DELETE", Resource: "pods"}: 100, {Verb: "POST", Resource: "pods"}: 100}
	run := func(first, all float64, nodes bool, changed counts) *result {
		sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
		return &result{converge: sec(2), running: sec(5), nodes: nodes, changeFirst: sec(first), changeCreated: sec(all / 2), changeAll: sec(all), changed: changed}
	}
	withLease := pods.add(counts{{Verb: "GET", Resource: "leases"}: 2}, 1)
	results := map[string][]*result{
		handwritten + "/nodes":       {run(0.1, 4, true, pods)},
		metacel + "/nodes":           {run(0.2, 6, true, withLease)},
		handwritten + "/unthrottled": {run(0.1, 1, false, pods)},
		metacel + "/unthrottled":     {run(0.1, 1, false, pods)},
	}
	got := changeTable([]benchConfig{{name: "unthrottled"}, {name: "nodes", nodes: true}}, results)
	for _, want := range []string{
		"| unthrottled | hand-written | 2.0 | – | 0.10 | 0.5 | 1.0 | 200 | DELETE pods 100, POST pods 100 |",
		"| unthrottled | metacel | 2.0 | – | 0.10 (×1.0) | 0.5 (×1.0) | 1.0 (×1.0) | 200 (×1.0) | DELETE pods 100, POST pods 100 |",
		"| nodes | hand-written | 2.0 | 5.0 | 0.10 | 2.0 | 4.0 | 200 | DELETE pods 100, POST pods 100 |",
		"| nodes | metacel | 2.0 | 5.0 | 0.20 (×2.0) | 3.0 (×1.5) | 6.0 (×1.5) | 202 (×1.0) | DELETE pods 100, POST pods 100, GET leases 2 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no row %q in\n%s", want, got)
		}
	}
	if strings.Index(got, "| unthrottled | hand-written") > strings.Index(got, "| unthrottled | metacel") {
		t.Error("the baseline is not first")
	}
	if changeTable([]benchConfig{{name: "equal"}}, results) != "" {
		t.Error("a table with no change in it")
	}
}

// The nodes configuration asks hack/control-plane.sh for kube-scheduler and kwok with the nodes;
// the others for etcd and kube-apiserver alone; none for kube-controller-manager.
func TestTheControlPlaneHasNodesOnlyWhenAsked(t *testing.T) {
	if got := strings.Join(controlPlaneEnv(nil), "\n"); got != "METACEL_COMPONENTS=etcd kube-apiserver" {
		t.Errorf("no nodes: %q", got)
	}
	got := strings.Join(controlPlaneEnv([]string{"n0", "n1"}), "\n")
	if want := "METACEL_COMPONENTS=etcd kube-apiserver kube-scheduler kwok\nMETACEL_KWOK_NODES=n0 n1"; got != want {
		t.Errorf("nodes: %q, want %q", got, want)
	}
	var nodes []benchConfig
	for _, c := range configurations("") {
		if c.nodes {
			nodes = append(nodes, c)
		}
	}
	if len(nodes) != 1 || nodes[0].name != nodesConfig || nodes[0].handFrom != "" {
		t.Errorf("configurations with nodes: %+v", nodes)
	}
}

// Only the taints that the node lifecycle controller would remove from a Ready node go.
func TestOnlyTheNotReadyTaintsAreRemoved(t *testing.T) {
	taints := []corev1.Taint{
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "bench", Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
	}
	got := withoutNotReadyTaints(taints)
	if len(got) != 1 || got[0].Key != "dedicated" {
		t.Errorf("got %v", got)
	}
	if got := withoutNotReadyTaints(nil); len(got) != 0 {
		t.Errorf("none: %v", got)
	}
}
