//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/operator"
)

// recreatedWithin is how soon a deleted child must be back, swap or no swap.
const recreatedWithin = 5 * time.Second

// TestADeletedChildIsRecreatedAcrossAPolicySwap deletes a child as kubectl does (`kubectl
// delete --wait=false`: background propagation, no waiting) before a policy swap, right after
// one, while the new version takes over, and once it has: a new child is there within 5 s each
// time. The swap is a change of the policy that changes no child (a validation's message), from a
// ConfigMap and from a mounted directory (the kubelet's ..data swap): whatever changes while a
// swap runs must be seen by the new controller.
func TestADeletedChildIsRecreatedAcrossAPolicySwap(t *testing.T) {
	children := []struct {
		policy    string
		parentGVR schema.GroupVersionResource
		childGVR  schema.GroupVersionResource
		suffix    string
	}{
		{policy: "whalesay", parentGVR: whaleSaysGVR, childGVR: jobsGVR, suffix: "-job"},
		{policy: "myapp", parentGVR: myAppsGVR, childGVR: podsGVR, suffix: "-pod"},
	}
	sources := []struct {
		name  string
		start func(t *testing.T, cm *corev1.ConfigMap, onReload func(map[string]int)) (swap func(text string))
	}{
		{name: "from a ConfigMap", start: startOnConfigMap},
		{name: "from a mounted directory", start: startOnMountedDir},
	}
	for _, src := range sources {
		for _, c := range children {
			t.Run(c.policy+" "+src.name, func(t *testing.T) {
				policyNS := newNamespace(t, "swap-policies")
				cm := policyConfigMap(t, c.policy, policyNS)
				text := policyText(t, cm)
				gens := &generations{}
				// duringReload, when set, runs right after a reload has started the new version's
				// controller, while the old one still syncs: during the hand-over
				var duringReload atomic.Pointer[func(running map[string]int)]
				swap := src.start(t, cm, func(running map[string]int) {
					gens.set(running)
					if f := duringReload.Load(); f != nil {
						(*f)(running)
					}
				})
				gens.waitFor(t, c.policy, 1)

				ns := newNamespace(t, "swap")
				parent := sample(t, c.policy, ns)
				create(t, c.parentGVR, parent)
				child := parent.GetName() + c.suffix
				uid := waitFor(t, c.childGVR, ns, child, wait, nil).GetUID()
				deleted := func(t *testing.T) { t.Helper(); uid = waitRecreated(t, c.childGVR, ns, child, uid) }

				t.Run("before a swap", func(t *testing.T) {
					if err := deleteChild(t.Context(), c.childGVR, ns, child); err != nil {
						t.Fatal(err)
					}
					deleted(t)
				})
				for i, when := range []string{"right after", "during", "after"} {
					generation := 2 + i
					t.Run(when+" a swap", func(t *testing.T) {
						errs := make(chan error, 1)
						if when == "during" {
							var once sync.Once
							f := func(running map[string]int) {
								if running[c.policy] == generation {
									once.Do(func() { errs <- deleteChild(t.Context(), c.childGVR, ns, child) })
								}
							}
							duringReload.Store(&f)
							defer duringReload.Store(nil)
						}
						swap(validationMessage(text, fmt.Sprintf("v%d", generation)))
						switch when {
						case "right after":
							errs <- deleteChild(t.Context(), c.childGVR, ns, child)
						case "after":
							gens.waitFor(t, c.policy, generation)
							errs <- deleteChild(t.Context(), c.childGVR, ns, child)
						}
						gens.waitFor(t, c.policy, generation)
						if err := <-errs; err != nil {
							t.Fatal(err)
						}
						deleted(t)
					})
				}
			})
		}
	}
}

// startOnConfigMap runs the runtime on the policies of a namespace holding cm; swap updates cm.
func startOnConfigMap(t *testing.T, cm *corev1.ConfigMap, onReload func(map[string]int)) func(string) {
	applyConfigMap(t, cm)
	startRuntimeWith(t, operator.Options{PolicyNamespace: cm.Namespace, OnReload: onReload})
	return func(text string) {
		t.Helper()
		applyConfigMap(t, withPolicy(cm, func(string) string { return text }))
	}
}

// startOnMountedDir runs the runtime on a directory where cm is mounted as the kubelet mounts a
// ConfigMap volume; swap writes it again as the kubelet does (the ..data swap).
func startOnMountedDir(t *testing.T, cm *corev1.ConfigMap, onReload func(map[string]int)) func(string) {
	dir := t.TempDir()
	file := cm.Name + ".yaml"
	kubeletWrite(t, dir, file, []byte(policyText(t, cm)))
	startRuntimeWith(t, operator.Options{PolicyDirs: []string{dir}, OnReload: onReload})
	return func(text string) {
		t.Helper()
		kubeletWrite(t, dir, file, []byte(text))
	}
}

// policyText is the one policy a ConfigMap holds.
func policyText(t *testing.T, cm *corev1.ConfigMap) string {
	t.Helper()
	if len(cm.Data) != 1 {
		t.Fatalf("ConfigMap %s holds %d policies, want 1", cm.Name, len(cm.Data))
	}
	for _, v := range cm.Data {
		return v
	}
	return ""
}

// validationMessage changes the message of a policy's validation: a new version of the policy
// that changes none of its children.
func validationMessage(text, version string) string {
	const msg = "must be provided."
	if !strings.Contains(text, msg) {
		panic("the policy has no validation message to change")
	}
	return strings.Replace(text, msg, "must be provided ("+version+").", 1)
}

// deleteChild deletes a child as `kubectl delete --wait=false` does: background propagation, no
// waiting. Jobs' default would be to orphan their Pods, which keeps the Job until they are.
func deleteChild(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) error {
	background := metav1.DeletePropagationBackground
	err := cluster.dynamic.Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background})
	if err != nil {
		return fmt.Errorf("delete %s %s/%s: %w", gvr.Resource, ns, name, err)
	}
	return nil
}

// waitRecreated waits until a child deleted just now is there again (another UID, not being
// deleted), and returns the new one's UID.
func waitRecreated(t *testing.T, gvr schema.GroupVersionResource, ns, name string, old types.UID) types.UID {
	t.Helper()
	start := time.Now()
	obj := waitFor(t, gvr, ns, name, recreatedWithin, func(obj *unstructured.Unstructured) error {
		if obj.GetUID() == old || obj.GetDeletionTimestamp() != nil {
			return fmt.Errorf("the deleted one is still there")
		}
		return nil
	})
	t.Logf("%s %s/%s recreated in %s", gvr.Resource, ns, name, time.Since(start).Round(time.Millisecond))
	return obj.GetUID()
}
