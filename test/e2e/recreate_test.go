//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/operator"
)

// TestAPolicyChangeReplacesBoundPods runs MyApp's policy as users run it: its Pods bound to the
// kwok node by the scheduler and Running, so that a deletion is graceful (the Pod lingers with a
// deletionTimestamp until its node lets it go). A policy change that the Pods' Recreate strategy
// replaces them for reaches every Pod, reload after reload, and no parent reports its own
// Recreate as another writer deleting its child (ChildKeepsDisappearing). Removing the policy
// while a Recreate is under way leaves no parent without its Pod. Something that really keeps
// deleting a child is still reported.
func TestAPolicyChangeReplacesBoundPods(t *testing.T) {
	policyNS := newNamespace(t, "policies")
	gens := &generations{}
	rt := startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS, OnReload: gens.set})
	cm := policyConfigMap(t, "myapp", policyNS)
	applyConfigMap(t, cm)
	gens.waitFor(t, "myapp", 1)

	ns := newNamespace(t, "bound")
	const parents = 50
	for i := range parents {
		app := sample(t, "myapp", ns)
		app.SetName(fmt.Sprintf("app-%02d", i))
		create(t, myAppsGVR, app)
	}
	eventually(t, 2*time.Minute, "every Pod bound and Running", boundPodsAt(t, ns, parents, ""))
	keeps := watchChildKeepsDisappearing(t, ns)

	for i, v := range []string{"v2", "v3", "v4"} {
		t.Run("reload "+v+" replaces every bound Pod", func(t *testing.T) {
			creates := rt.writesTo("/api/v1/namespaces/" + ns + "/pods")
			applyConfigMap(t, withPolicy(cm, podLabelled(v)))
			gens.waitFor(t, "myapp", 2+i)
			eventually(t, 30*time.Second, "every Pod at "+v, boundPodsAt(t, ns, parents, v))
			if n := rt.writesTo("/api/v1/namespaces/"+ns+"/pods") - creates; n != parents {
				t.Errorf("%d Pod creates for %d Pods replaced, want one each: a Recreate creates once its old Pod is gone", n, parents)
			}
			if seen := keeps.seen(); len(seen) > 0 {
				t.Errorf("metacel's own Recreate was reported as ChildKeepsDisappearing on %d parents: %v", len(seen), seen)
			}
		})
	}

	t.Run("a real deleter is still reported", func(t *testing.T) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			// the deleter's pace is not the point: it deletes the Pod again soon after each
			// re-create, and the fightLimit-th re-create it undoes is reported
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			for {
				_ = cluster.kube.CoreV1().Pods(ns).Delete(t.Context(), "app-00-pod", metav1.DeleteOptions{})
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		})
		defer wg.Wait()
		defer close(stop)
		waitFor(t, myAppsGVR, ns, "app-00", 90*time.Second, hasCondition("Synced", "False", contract.ReasonChildKeepsDisappearing, ""))
	})

	t.Run("removing the policy during a Recreate loses no child", func(t *testing.T) {
		created := watchPodsCreated(t, ns, "v5")
		applyConfigMap(t, withPolicy(cm, podLabelled("v5")))
		eventually(t, 10*time.Second, "a first Pod replaced", func() error {
			for _, v := range podUIDs(t, ns) {
				if strings.HasSuffix(v, "@v5") {
					return nil
				}
			}
			return fmt.Errorf("none yet")
		})
		if err := cluster.kube.CoreV1().ConfigMaps(policyNS).Delete(t.Context(), cm.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gens.waitFor(t, "myapp", 0)
		// app-00's Pod the deleter above removed may be missing: it was missing before. kwok
		// deletes a Pod it lets go of by name, without its UID: now and then it deletes the new
		// Pod of the same name, created just after; a Pod created at v5 and gone is such a one
		// (a kubelet deletes with the Pod's UID as precondition)
		eventually(t, 30*time.Second, "every other parent keeps a Pod, or got its new one", func() error {
			pods := podUIDs(t, ns)
			var missing []string
			for i := 1; i < parents; i++ {
				name := fmt.Sprintf("app-%02d-pod", i)
				if _, ok := pods[name]; !ok && !created.has(name) {
					missing = append(missing, fmt.Sprintf("app-%02d", i))
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("%d parents without a Pod: %v", len(missing), missing)
			}
			return nil
		})
	})
}

// podsCreated records the names of the Pods created with a version label, as a watch sees them.
type podsCreated struct {
	mu    sync.Mutex
	names map[string]bool
}

func (p *podsCreated) has(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.names[name]
}

// watchPodsCreated watches a namespace's MyApp Pods until the test ends and records those
// created with the version label v.
func watchPodsCreated(t *testing.T, ns, v string) *podsCreated {
	t.Helper()
	p := &podsCreated{names: map[string]bool{}}
	w, err := cluster.kube.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{LabelSelector: "metacel.dev/policy=myapp,version=" + v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			if pod, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
				p.mu.Lock()
				p.names[pod.Name] = true
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// boundPodsAt checks that n MyApp Pods of a namespace, not being deleted, carry the version
// label v, and are bound to a node and Running.
func boundPodsAt(t *testing.T, ns string, n int, v string) func() error {
	return func() error {
		pods, err := cluster.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "metacel.dev/policy=myapp"})
		if err != nil {
			return err
		}
		ready := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Labels["version"] == v && p.Spec.NodeName != "" && p.Status.Phase == "Running" {
				ready++
			}
		}
		if ready < n {
			return fmt.Errorf("%d of %d Pods at version %q bound and Running (%d listed)", ready, n, v, len(pods.Items))
		}
		return nil
	}
}

// childKeepsDisappearing records the parents of a namespace that ever reported
// ChildKeepsDisappearing, as a poller sees their conditions.
type childKeepsDisappearing struct {
	mu      sync.Mutex
	parents map[string]bool
}

func (k *childKeepsDisappearing) seen() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for p := range k.parents {
		out = append(out, p)
	}
	return out
}

// watchChildKeepsDisappearing polls a namespace's MyApps until the test ends, and the Warning
// events metacel records, for ChildKeepsDisappearing.
func watchChildKeepsDisappearing(t *testing.T, ns string) *childKeepsDisappearing {
	k := &childKeepsDisappearing{parents: map[string]bool{}}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(done); wg.Wait() })
	wg.Go(func() {
		for {
			list, err := cluster.dynamic.Resource(myAppsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
			if err == nil {
				for _, app := range list.Items {
					if c := condition(&app, "Synced"); c != nil && c["reason"] == contract.ReasonChildKeepsDisappearing {
						k.mu.Lock()
						k.parents[app.GetName()] = true
						k.mu.Unlock()
					}
				}
			}
			events, err := cluster.kube.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
			if err == nil {
				for _, e := range events.Items {
					if e.Reason == contract.ReasonChildKeepsDisappearing {
						k.mu.Lock()
						k.parents[e.Regarding.Name] = true
						k.mu.Unlock()
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	return k
}
