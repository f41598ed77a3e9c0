//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	k8swait "k8s.io/apimachinery/pkg/util/wait"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/rollout"
)

// rolloutDeadline is how long, in seconds, a healthy version's rollout step has to become healthy:
// a bound, never waited out, so generous.
const rolloutDeadline = 15

// badRolloutDeadline is the health deadline of the version whose Pods never run: the test waits
// it out before the rollback, so it is short, yet long enough for the first step's Pods to be
// created (under a second) before it.
const badRolloutDeadline = 6

// rolloutKillPause is the first step's pause of the version whose runtime is killed mid-rollout:
// the window in which the test sees the first step done and kills the driver (well under a
// second), and what the restarted runtime waits again before the second step.
const rolloutKillPause = 4

// rolloutSpec rolls MyApp's new versions out in three steps, a parent's health judged within
// deadline seconds; pause is the first step's pause.
func rolloutSpec(pause, deadline int) func(string) string {
	return func(p string) string {
		spec := fmt.Sprintf("spec:\n  rollout:\n    steps:\n      - percent: 34\n        pauseSeconds: %d\n      - percent: 67\n      - percent: 100\n    healthDeadlineSeconds: %d\n", pause, deadline)
		return strings.Replace(p, "spec:\n", spec, 1)
	}
}

// unschedulable edits MyApp's policy so that its Pods select no node: they stay Pending, as the
// Pods of a realistic bad version would.
func unschedulable(p string) string {
	re := regexp.MustCompile(`\n( +)containers:\n`)
	return re.ReplaceAllString(p, "\n${1}nodeSelector:\n${1}  metacel.dev/nowhere: \"true\"\n${1}containers:\n")
}

// podNamed edits MyApp's policy to name its Pods <parent>-pod-<tag>. Each version in these tests
// names its Pods apart: kwok, the fake kubelet, tracks Pods by name and deletes by name, so a Pod
// re-created under its name at once (Recreate) can be deleted or left Pending by kwok's work on
// the Pod it replaced; a kubelet works by UID and has no such race.
func podNamed(tag string) func(string) string {
	return func(p string) string {
		return strings.Replace(p, `name: "${parent.metadata.name}-pod"`, `name: "${parent.metadata.name}-pod-`+tag+`"`, 1)
	}
}

func chain(edits ...func(string) string) func(string) string {
	return func(p string) string {
		for _, e := range edits {
			p = e(p)
		}
		return p
	}
}

// myAppPod is what a test sees of one MyApp's Pod.
type myAppPod struct {
	uid, version string
	pending      bool // selects no node
}

// myAppPods returns each MyApp Pod of ns, alive, by parent name.
func myAppPods(t *testing.T, ns string) map[string]myAppPod {
	t.Helper()
	pods, err := cluster.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "metacel.dev/policy=myapp"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]myAppPod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			out[p.Labels["app"]] = myAppPod{uid: string(p.UID), version: p.Labels["version"], pending: len(p.Spec.NodeSelector) > 0}
		}
	}
	return out
}

// rolloutRecord reads MyApp's rollout record.
func rolloutRecord(t *testing.T, ns string) (rollout.Record, error) {
	t.Helper()
	var rec rollout.Record
	cm, err := cluster.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), rollout.ConfigMapName("myapp"), metav1.GetOptions{})
	if err != nil {
		return rec, err
	}
	err = json.Unmarshal([]byte(cm.Data["record.json"]), &rec)
	rec.StableSource = cm.Data["stable.yaml"]
	return rec, err
}

// TestPolicyRollout rolls three versions of MyApp out over 30 parents in three steps (34%, 67%,
// 100%): one whose Pods never run stops at the first step and goes back; a healthy one goes
// through; one whose runtime is killed mid-rollout resumes where it was. With one runtime, and
// with three sharded replicas (the replica holding slot 0 drives the rollout, and is the one
// killed), on an API server with and without the ShardedListAndWatch gate.
func TestPolicyRollout(t *testing.T) {
	bin := buildMetacel(t)
	sharded := []string{"r-a", "r-b", "r-c"}
	for _, tt := range []struct {
		name          string
		replicas      []string
		selectsShards bool
	}{
		{"one runtime", []string{"runtime"}, false},
		{"three sharded replicas, the API server ignoring shard selectors", sharded, false},
		{"three sharded replicas, the API server selecting shards", sharded, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.selectsShards {
				onShardSelectingCluster(t)
			}
			testPolicyRollout(t, bin, tt.replicas)
		})
	}
}

// rolloutRuntimes are the runtimes of a rollout test: one, or sharded replicas.
type rolloutRuntimes struct {
	bin, policyNS string
	procs         map[string]*process
}

func startRolloutRuntimes(t *testing.T, bin, policyNS string, ids []string) *rolloutRuntimes {
	t.Helper()
	r := &rolloutRuntimes{bin: bin, policyNS: policyNS, procs: map[string]*process{}}
	for _, id := range ids {
		r.procs[id] = startProcess(t, bin, r.args(id)...)
	}
	if len(ids) > 1 {
		sharedAmong(t, cluster.kube, policyNS, ids...)
	}
	return r
}

func (r *rolloutRuntimes) args(id string) []string {
	args := []string{"run", "--allow-policies-without-service-account", "--kubeconfig", cluster.kubeconfig, "--policy-namespace", r.policyNS,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--v=2"}
	if id != "runtime" {
		args = append(args, "--shards=auto", "--shard-identity", id,
			"--shard-lease-duration=6s", "--shard-renew-deadline=4s", "--shard-renew-interval=1s")
	}
	return args
}

// driver returns the runtime that drives the rollouts: the only one, or the replica holding slot 0.
func (r *rolloutRuntimes) driver(t *testing.T) string {
	t.Helper()
	if _, ok := r.procs["runtime"]; ok {
		return "runtime"
	}
	for id, slots := range shardLeases(t, cluster.kube, r.policyNS) {
		if slotsOf(slots).Has(0) {
			return id
		}
	}
	t.Fatal("no replica holds slot 0")
	return ""
}

// restart kills (SIGKILL) a runtime and starts it again.
func (r *rolloutRuntimes) restart(t *testing.T, id string) {
	r.procs[id].kill9()
	r.procs[id] = startProcess(t, r.bin, r.args(id)...)
}

func testPolicyRollout(t *testing.T, bin string, replicas []string) {
	policyNS, ns := newNamespace(t, "rollout-policies"), newNamespace(t, "rollout")
	base := policyConfigMap(t, "myapp", policyNS)
	const deadline = badRolloutDeadline
	applyConfigMap(t, withPolicy(base, chain(rolloutSpec(0, rolloutDeadline), podNamed("a"))))
	outer := t
	rts := startRolloutRuntimes(t, bin, policyNS, replicas)
	// the next configuration's runtimes watch MyApps in every namespace: this one's must be gone
	// before it starts, deleted while this configuration's runtimes still run (cleanups run last
	// registered first), or the next rollout would move them too (seen once: 21 moved parents,
	// 11 of them in this namespace, being terminated)
	t.Cleanup(func() { deleteMyAppsAndWait(t, ns) })

	const parents = 30
	uids := map[string]types.UID{}
	for i := range parents {
		app := sample(t, "myapp", ns)
		app.SetName(fmt.Sprintf("app-%02d", i))
		uids[app.GetName()] = create(t, myAppsGVR, app).GetUID()
	}
	first := movedAt(uids, 34)
	if len(first) == 0 || len(first) == parents {
		t.Fatalf("the first step moves %d of %d parents: pick other names", len(first), parents)
	}
	allReady := func(version string) func() error {
		return func() error {
			pods := myAppPods(t, ns)
			for name := range uids {
				if pods[name].version != version || pods[name].pending {
					return fmt.Errorf("%s: pod %+v, want version %q scheduled", name, pods[name], version)
				}
				p, err := get(t, myAppsGVR, ns, name)
				if err != nil {
					return err
				}
				if err := hasCondition("Ready", "True", "", "")(p); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			return nil
		}
	}
	eventually(t, 2*wait, "every MyApp ready", allReady(""))

	t.Run("a version whose Pods never run stops at the first step and is rolled back", func(t *testing.T) {
		before := myAppPods(t, ns)
		start := time.Now()
		applyConfigMap(t, withPolicy(base, chain(rolloutSpec(0, deadline), podNamed("bad"), unschedulable)))
		// until the rollback, only the first step's parents ever get the bad Pod
		var rolledBackAt time.Time
		sawRollingOut := ""
		eventually(t, time.Duration(deadline)*time.Second+wait, "the rollout rolled back", func() error {
			if cm, err := cluster.kube.CoreV1().ConfigMaps(policyNS).Get(t.Context(), base.Name, metav1.GetOptions{}); err == nil &&
				cm.Labels[contract.LabelPolicyState] == string(policystatus.RollingOut) {
				sawRollingOut = cm.Labels[contract.LabelPolicyRollout]
			}
			for name, p := range myAppPods(t, ns) {
				if p.pending && !first[name] {
					t.Fatalf("parent %s, not in the first step, got the bad version", name)
				}
			}
			rec, err := rolloutRecord(t, policyNS)
			if err != nil || rec.Phase != rollout.RolledBack {
				return fmt.Errorf("record %+v: %w", rec, err)
			}
			rolledBackAt = time.Now()
			return nil
		})
		if took := rolledBackAt.Sub(start); took < deadline*time.Second {
			t.Errorf("rolled back after %s, before the health deadline (%ds)", took, deadline)
		}
		expectEqual(t, "the policy ConfigMap's rollout label while rolling out", sawRollingOut, "1-of-3")
		waitStatus(t, policyNS, base.Name, "the policy ConfigMap says RolledBack", inState(policystatus.RolledBack, "rolled back at step 1 of 3"))
		note := waitEvent(t, policyNS, base.Name, "PolicyRolloutFailed")
		for name := range first {
			if !strings.Contains(note, name) && !strings.Contains(note, "more") {
				t.Errorf("the PolicyRolloutFailed event does not name %s: %s", name, note)
			}
		}
		eventually(t, rolloutDeadline*time.Second, "the moved parents back on the stable version", allReady(""))
		after := myAppPods(t, ns)
		for name := range uids {
			if !first[name] && after[name].uid != before[name].uid {
				t.Errorf("parent %s, not in the first step, had its Pod replaced", name)
			}
		}
		rec, _ := rolloutRecord(t, policyNS)
		if !strings.Contains(rec.Message, "unhealthy") {
			t.Errorf("record message %q does not say why", rec.Message)
		}
	})

	t.Run("a healthy version goes through every step", func(t *testing.T) {
		applyConfigMap(t, withPolicy(base, chain(rolloutSpec(0, rolloutDeadline), podNamed("v2"), podLabelled("v2"))))
		steps := map[int]bool{}
		eventually(t, 2*wait, "v2 through every step, stable", func() error {
			rec, err := rolloutRecord(t, policyNS)
			if err != nil {
				return err
			}
			if rec.Phase == rollout.RollingOut {
				steps[rec.Step] = true
			}
			if rec.Phase != rollout.Stable || rec.Target != "" || !strings.Contains(rec.StableSource, `version: "v2"`) {
				return fmt.Errorf("record %+v", rec)
			}
			return nil
		})
		eventually(t, wait, "every MyApp on v2", allReady("v2"))
		if !steps[0] || !steps[1] || !steps[2] {
			t.Errorf("the record went through the steps %v, want 0, 1 and 2", steps)
		}
		waitStatus(t, policyNS, base.Name, "the policy ConfigMap says Running", inState(policystatus.Running, ""))
	})

	t.Run("killed mid-rollout, the runtime resumes where it was", func(t *testing.T) {
		onV2 := myAppPods(t, ns)
		applyConfigMap(t, withPolicy(base, chain(rolloutSpec(rolloutKillPause, rolloutDeadline), podNamed("v3"), podLabelled("v3"))))
		var rec rollout.Record
		eventually(t, wait, "the first step's parents on v3", func() error {
			var err error
			if rec, err = rolloutRecord(t, policyNS); err != nil || rec.Phase != rollout.RollingOut || rec.Step != 0 {
				return fmt.Errorf("record %+v: %w", rec, err)
			}
			for name, p := range myAppPods(t, ns) {
				// every replica completed v2 (a follower too: it follows the record), so the
				// parents not moved stay on v2, their Pods untouched
				if !first[name] && (p.version != "v2" || p.uid != onV2[name].uid) {
					t.Fatalf("parent %s, not in the first step, left v2: pod %+v, before %+v", name, p, onV2[name])
				}
				if first[name] != (p.version == "v3") || p.pending {
					return fmt.Errorf("%s: pod %+v", name, p)
				}
			}
			return nil
		})
		moved := myAppPods(t, ns)
		rts.restart(outer, rts.driver(t))
		eventually(t, wait, "the restarted runtime at the second step, the first step's start kept", func() error {
			got, err := rolloutRecord(t, policyNS)
			if err == nil && got.Phase == rollout.RollingOut && got.Step == 0 && !got.StepStarted.Equal(rec.StepStarted) {
				t.Fatalf("the restarted runtime began the first step again: started %s, before the kill %s", got.StepStarted, rec.StepStarted)
			}
			if err != nil || got.Phase != rollout.RollingOut || got.Step != 1 {
				return fmt.Errorf("record %+v: %w", got, err)
			}
			return nil
		})
		eventually(t, 2*wait, "every MyApp on v3", allReady("v3"))
		after := myAppPods(t, ns)
		for name := range first {
			if after[name].uid != moved[name].uid {
				t.Errorf("parent %s of the first step had its v3 Pod replaced again after the restart", name)
			}
		}
		eventually(t, wait, "the record says v3 is stable", func() error {
			if got, err := rolloutRecord(t, policyNS); err != nil || got.Phase != rollout.Stable {
				return fmt.Errorf("record %+v: %w", got, err)
			}
			return nil
		})
	})
}

// movedAt returns the parents that a rollout step of percent moves.
func movedAt(uids map[string]types.UID, percent int) map[string]bool {
	out := map[string]bool{}
	for name, uid := range uids {
		if policy.RolloutBucket(uid) < percent {
			out[name] = true
		}
	}
	return out
}

// deleteMyAppsAndWait deletes a namespace and waits until none of its MyApps is left (its Pods
// may take longer: no policy of the next configuration reads them), in a test's cleanup (whose
// context is already canceled).
func deleteMyAppsAndWait(t *testing.T, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	_ = cluster.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	err := k8swait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := cluster.dynamic.Resource(myAppsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("MyApps of namespace %s still there after %s: %v", ns, 2*wait, err)
	}
}
