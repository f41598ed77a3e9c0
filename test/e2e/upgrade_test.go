//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/policy"
)

// previousVersion is the commit of the runtime that TestUpgradingTheRuntimeReplacesNoChild
// upgrades from, and downgrades to: the last one before the latest change of what the runtime
// writes on children for itself (e9e2b85 named a child's policy in metacel.dev/policy alone;
// this version adds metacel.dev/policy-name beside it, and reads either). The next change of a
// bookkeeping key moves it to the commit before that change. (The change before, from
// metacel.dev/desired-hash to metacel.dev/content-hash, was tested from 895e451, which hashed
// the whole child: a downgrade to it recreates Recreate children, and is not tested.)
const previousVersion = "e9e2b85265408e3509be5bfa7f96f1b57fea6e76"

// upgradeParents is how many MyApps (each a Pod of a Recreate resource, bound to the kwok node)
// the upgrade test converges with the previous runtime before upgrading.
const upgradeParents = 200

// upgradePace is the bookkeeping patches a second the upgraded runtime may send (and in a burst).
const upgradePace = 50

// TestUpgradingTheRuntimeReplacesNoChild converges the five seeds, 200 MyApps and a Secret written
// with stringData (a Recreate resource) with the
// runtime of previousVersion (built from git), then starts this one over them: every child's
// bookkeeping is brought up to date by a merge patch of its metadata (the policy's name under
// metacel.dev/policy-name, beside metacel.dev/policy), paced, and none is deleted, recreated or
// applied (their UIDs are those the previous runtime created; the runtime sent no other write to
// children); then nothing is written at rest, nor after a restart. Then the children are edited
// as a later runtime might leave them (a label this one writes removed, a key it does not know
// added): this one restores its label by a patch, leaves the other key, and replaces nothing.
// Last, the previous runtime is started again over the children this one patched (a downgrade):
// it still finds each as its child (by metacel.dev/policy), replaces none, and a change of a
// parent still reaches its child. Before issue 45, every Pod was deleted and created anew by
// an upgrade (its desired-hash covered the labels), and a later key would have done the same.
func TestUpgradingTheRuntimeReplacesNoChild(t *testing.T) {
	previous := buildRuntimeAt(t, previousVersion)
	policyNS := newNamespace(t, "policies")
	seeds := []string{"myapp", "memcached", "whalesay", "configmapsync", "myingress"}
	for _, name := range seeds {
		applyConfigMap(t, policyConfigMap(t, name, policyNS))
	}
	ns, dst := newNamespace(t, "upgrade"), newNamespace(t, "upgrade-copy")
	applyConfigMap(t, stringDataSecretPolicy(t, ns, policyNS))
	old := startProcess(t, previous, "run", "--kubeconfig", cluster.kubeconfig, "--policy-namespace", policyNS,
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	createSeedsAndMyApps(t, ns, dst, upgradeParents)
	w := widget(ns, "w")
	w.SetLabels(map[string]string{"e2e.metacel.dev/test": ns})
	create(t, widgetsGVR, w)
	waitFor(t, widgetsGVR, ns, "w", wait, hasCondition("Synced", "True", "", ""))
	waitAllReady(t, ns, upgradeParents+1)
	waitFor(t, memcachedsGVR, ns, "memcached-sample", wait, hasCondition("Synced", "True", "", ""))
	waitFor(t, whaleSaysGVR, ns, "example-whalesay", wait, hasCondition("Ready", "True", "", ""))
	waitFor(t, myIngressesGVR, ns, "example-ingress", wait, hasCondition("Synced", "True", "", ""))
	waitFor(t, cmSyncsGVR, ns, "example-sync", wait, hasCondition("Ready", "True", "", ""))
	old.stop()
	before := childrenOf(t, ns, dst)
	if n := countWith(before, func(c *unstructured.Unstructured) bool {
		return c.GetLabels()[contract.LabelChildPolicyLegacy] != "" && c.GetLabels()[contract.LabelChildPolicyName] == ""
	}); n != len(before) {
		t.Fatalf("%d of the previous runtime's %d children carry %s alone: not the runtime this test upgrades from", n, len(before), contract.LabelChildPolicyLegacy)
	}

	opts := operator.Options{PolicyNamespace: policyNS, BookkeepingPatchesPerSecond: upgradePace}
	upgraded := startRuntimeWith(t, opts)
	waitChildren(t, ns, dst, "every child's bookkeeping brought up to date", func(c *unstructured.Unstructured) bool {
		a, l := c.GetAnnotations(), c.GetLabels()
		return a[contract.AnnotationContentHash] != "" && a[contract.AnnotationDesiredHash] == "" &&
			l[contract.LabelChildPolicyName] != "" && l[contract.LabelChildPolicyName] == l[contract.LabelChildPolicyLegacy]
	})
	settled(t, 5*time.Second, time.Minute, quiet(upgraded, ns, dst))
	sameChildren(t, before, childrenOf(t, ns, dst))
	patches := onlyBookkeepingPatches(t, upgraded.sentSoFar(), ns, dst)
	if patches < len(before) {
		t.Errorf("%d bookkeeping patches for %d children: each needed one", patches, len(before))
	}
	upgraded.stop()

	restarted := startRuntimeWith(t, opts)
	consistently(t, 10*time.Second, "the runtime restarted after the upgrade writes nothing", quiet(restarted, ns, dst))
	restarted.stop()

	editAsALaterRuntime(t, childrenOf(t, ns, dst))
	again := startRuntimeWith(t, opts)
	waitChildren(t, ns, dst, "the shard-slot label restored, the later runtime's key left", func(c *unstructured.Unstructured) bool {
		return c.GetLabels()[contract.LabelShardSlot] != "" && c.GetLabels()["metacel.dev/later"] == "kept"
	})
	settled(t, 5*time.Second, time.Minute, quiet(again, ns, dst))
	sameChildren(t, before, childrenOf(t, ns, dst))
	onlyBookkeepingPatches(t, again.sentSoFar(), ns, dst)
	again.stop()

	downgradeKeepsTheChildren(t, previous, policyNS, ns, dst, before)
}

// downgradeKeepsTheChildren starts the runtime of previousVersion again over the children this one
// brought up to date, and checks that it still converges them: a change of a parent (the
// Memcached's size) reaches its child (the Deployment, in place), and no child is replaced: it
// reads the policy's name from metacel.dev/policy, which this runtime still writes, and leaves
// metacel.dev/policy-name, a key it does not know.
func downgradeKeepsTheChildren(t *testing.T, previous, policyNS, ns, dst string, before []*unstructured.Unstructured) {
	t.Helper()
	old := startProcess(t, previous, "run", "--kubeconfig", cluster.kubeconfig, "--policy-namespace", policyNS,
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	defer old.stop()
	patch := []byte(`{"spec":{"size":2}}`)
	if _, err := cluster.dynamic.Resource(memcachedsGVR).Namespace(ns).Patch(t.Context(), "memcached-sample", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, deploymentsGVR, ns, "memcached-sample", wait, func(d *unstructured.Unstructured) error {
		if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 2 {
			return fmt.Errorf("%d replicas, want the parent's new size, 2", n)
		}
		return nil
	})
	consistently(t, 10*time.Second, "the previous runtime replaces no child", func() error {
		if replaced := replacedChildren(before, childrenOf(t, ns, dst)); len(replaced) > 0 {
			return fmt.Errorf("%d of %d children replaced, deleted or added, e.g. %s", len(replaced), len(before), replaced[:min(5, len(replaced))])
		}
		return nil
	})
	children := childrenOf(t, ns, dst)
	if n := countWith(children, func(c *unstructured.Unstructured) bool {
		return c.GetLabels()[contract.LabelChildPolicyLegacy] != ""
	}); n != len(children) {
		t.Errorf("%d of %d children carry %s after the downgrade, want all", n, len(children), contract.LabelChildPolicyLegacy)
	}
}

// buildRuntimeAt builds `metacel` of a commit of this repository (git archive, then go build)
// and returns its path.
func buildRuntimeAt(t *testing.T, commit string) string {
	t.Helper()
	dir := t.TempDir()
	if exec.CommandContext(t.Context(), "git", "-C", repo, "cat-file", "-e", commit+"^{commit}").Run() != nil {
		// a shallow clone: fetch the commit from where the clone came from
		if out, err := exec.CommandContext(t.Context(), "git", "-C", repo, "fetch", "--quiet", "origin", commit).CombinedOutput(); err != nil {
			t.Fatalf("commit %s is not in the clone, nor fetched from its origin (clone with history: git fetch --unshallow): %v\n%s", commit, err, out)
		}
	}
	archive := exec.CommandContext(t.Context(), "sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", repo, commit, dir)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("read commit %s of the repository: %v\n%s", commit, err, out)
	}
	bin := filepath.Join(t.TempDir(), "metacel-"+commit[:7])
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/metacel")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as buildMetacel
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/metacel at %s: %v\n%s", commit, err, out)
	}
	return bin
}

// createSeedsAndMyApps creates a parent of each seed in ns (the ConfigMapSync copies into dst),
// and n MyApps more.
func createSeedsAndMyApps(t *testing.T, ns, dst string, n int) {
	t.Helper()
	for _, s := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{myAppsGVR, "myapp"}, {memcachedsGVR, "memcached"}, {whaleSaysGVR, "whalesay"}, {myIngressesGVR, "myingress"}} {
		create(t, s.gvr, sample(t, s.name, ns))
	}
	configMapSync(t, ns, dst)
	names := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range names {
				app := sample(t, "myapp", ns)
				app.SetName(name)
				if _, err := cluster.dynamic.Resource(myAppsGVR).Namespace(ns).Create(context.Background(), app, metav1.CreateOptions{}); err != nil {
					t.Errorf("create MyApp %s: %v", name, err)
				}
			}
		})
	}
	for i := range n {
		names <- fmt.Sprintf("app-%04d", i)
	}
	close(names)
	wg.Wait()
}

// childResources are the resources of the seeds' children, and of the Secret written with
// stringData.
var childResources = []schema.GroupVersionResource{podsGVR, deploymentsGVR, jobsGVR, configMapsGVR, lbGVR, secretsGVR}

// stringDataSecretPolicy is the policy ConfigMap, in policyNS, of a Secret written with stringData
// for the labelled Widgets of ns, of a Recreate resource (the case of issue 45: the API server
// stores stringData as data, and the hash of an earlier runtime was taken before), with its
// ServiceAccount and RBAC.
func stringDataSecretPolicy(t *testing.T, ns, policyNS string) *corev1.ConfigMap {
	t.Helper()
	text := fmt.Sprintf(secretPolicy, "upgrade-secret", ns, policy.Recreate)
	file := filepath.Join(t.TempDir(), "secret.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	grantPolicies(t, policyNS, file)
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "policy-upgrade-secret", Namespace: policyNS,
		Labels: map[string]string{contract.LabelPolicyConfigMap: "true"}}, Data: map[string]string{"secret.yaml": text}}
}

// childrenOf lists the objects metacel manages in the namespaces.
func childrenOf(t *testing.T, namespaces ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, ns := range namespaces {
		for _, gvr := range childResources {
			list, err := cluster.dynamic.Resource(gvr).Namespace(ns).List(t.Context(), metav1.ListOptions{LabelSelector: contract.LabelManagedBy + "=" + contract.ManagedByValue})
			if err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				out = append(out, &list.Items[i])
			}
		}
	}
	return out
}

func countWith(objs []*unstructured.Unstructured, pred func(*unstructured.Unstructured) bool) int {
	n := 0
	for _, o := range objs {
		if pred(o) {
			n++
		}
	}
	return n
}

// waitChildren waits until every child in the namespaces satisfies done.
func waitChildren(t *testing.T, ns, dst, what string, done func(*unstructured.Unstructured) bool) {
	t.Helper()
	eventually(t, 2*time.Minute, what, func() error {
		children := childrenOf(t, ns, dst)
		if n := countWith(children, done); n != len(children) {
			return fmt.Errorf("%d of %d children", n, len(children))
		}
		return nil
	})
}

// sameChildren fails the test unless after holds the very objects of before (their UIDs): none
// deleted, recreated or added.
func sameChildren(t *testing.T, before, after []*unstructured.Unstructured) {
	t.Helper()
	if replaced := replacedChildren(before, after); len(replaced) > 0 {
		t.Errorf("%d of %d children replaced, deleted or added, e.g. %s", len(replaced), len(before), replaced[:min(5, len(replaced))])
	}
	t.Logf("%d children, each the object the previous runtime created", len(before))
}

// replacedChildren names the children of before that after does not hold as the same object
// (their UIDs), and those after holds anew, sorted.
func replacedChildren(before, after []*unstructured.Unstructured) []string {
	uids := func(objs []*unstructured.Unstructured) map[string]types.UID {
		m := map[string]types.UID{}
		for _, o := range objs {
			m[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = o.GetUID()
		}
		return m
	}
	was, now := uids(before), uids(after)
	var replaced []string
	for id, uid := range was {
		if now[id] != uid {
			replaced = append(replaced, id)
		}
	}
	for id := range now {
		if _, ok := was[id]; !ok {
			replaced = append(replaced, id+" (new)")
		}
	}
	slices.Sort(replaced)
	return replaced
}

// onlyBookkeepingPatches fails the test unless every write the runtime sent to the children's
// resources in the namespaces is a JSON merge patch (of their metadata), and no more of them in
// any second than the pace allows (its burst and a second's tokens); it returns their number.
func onlyBookkeepingPatches(t *testing.T, sent []sentRequest, namespaces ...string) int {
	t.Helper()
	var times []time.Time
	for _, r := range sent {
		if !inNamespaces(r.path, namespaces) || !slices.ContainsFunc(childResources, func(gvr schema.GroupVersionResource) bool {
			return strings.Contains(r.path, "/"+gvr.Resource+"/")
		}) {
			continue
		}
		if r.method != "PATCH" || r.contentType != string(types.MergePatchType) {
			t.Errorf("a write to a child that is no bookkeeping patch: %s %s (%s)", r.method, r.path, r.contentType)
			continue
		}
		times = append(times, r.at)
	}
	most := 0
	for i := range times {
		j := i
		for j < len(times) && times[j].Sub(times[i]) < time.Second {
			j++
		}
		most = max(most, j-i)
	}
	if limit := 2 * upgradePace; most > limit {
		t.Errorf("%d bookkeeping patches in one second, more than the pace's %d", most, limit)
	}
	if len(times) > 0 {
		t.Logf("%d bookkeeping patches in %v, at most %d in a second (pace %d a second)", len(times), times[len(times)-1].Sub(times[0]).Round(time.Millisecond), most, upgradePace)
	}
	return len(times)
}

func inNamespaces(path string, namespaces []string) bool {
	return slices.ContainsFunc(namespaces, func(ns string) bool { return strings.Contains(path, "/namespaces/"+ns+"/") })
}

// editAsALaterRuntime leaves the children as a later runtime might: without the shard-slot label
// (a key it no longer writes), with a key this one does not know.
func editAsALaterRuntime(t *testing.T, children []*unstructured.Unstructured) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{contract.LabelShardSlot: nil, "metacel.dev/later": "kept"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range children {
		gvr := podsGVR
		for _, r := range childResources {
			if r.Group == c.GroupVersionKind().Group && strings.EqualFold(r.Resource, c.GetKind()+"s") {
				gvr = r
			}
		}
		if _, err := cluster.dynamic.Resource(gvr).Namespace(c.GetNamespace()).Patch(t.Context(), c.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "later-metacel"}); err != nil {
			t.Fatalf("edit %s %s: %v", c.GetKind(), c.GetName(), err)
		}
	}
}
