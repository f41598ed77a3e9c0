//go:build e2e

package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/operator"
)

// TestAPolicyChangeReplacesBoundPods runs MyApp's policy as users run it: its Pods bound to the
// kwok node by the scheduler and Running, so that a deletion is graceful (the Pod lingers with a
// deletionTimestamp until its node lets it go). A policy change that the Pods' Recreate strategy
// replaces them for reaches every Pod, reload after reload, and no parent reports its own
// Recreate as another writer deleting its child (ChildKeepsDisappearing). The API server's audit
// log holds, for each Pod of a reload, one create, one delete by the runtime and one final delete
// by kwok, the node that lets the Pod go: the control plane keeps kwok from deleting the new Pod
// of the same name, as a kubelet, which deletes by UID, never does. Removing the policy while a
// Recreate is under way leaves no parent without its Pod. Something that really keeps deleting a
// child is still reported.
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
			since := time.Now()
			applyConfigMap(t, withPolicy(cm, podLabelled(v)))
			gens.waitFor(t, "myapp", 2+i)
			eventually(t, 30*time.Second, "every Pod at "+v, boundPodsAt(t, ns, parents, v))
			if n := rt.writesTo("/api/v1/namespaces/"+ns+"/pods") - creates; n != parents {
				t.Errorf("%d Pod creates for %d Pods replaced, want one each: a Recreate creates once its old Pod is gone", n, parents)
			}
			checkEachPodReplacedOnce(t, ns, parents, since)
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
		// app-00's Pod the deleter above removed may be missing: it was missing before
		eventually(t, 30*time.Second, "every other parent keeps its Pod, or got its new one", func() error {
			pods := podUIDs(t, ns)
			var missing []string
			for i := 1; i < parents; i++ {
				if _, ok := pods[fmt.Sprintf("app-%02d-pod", i)]; !ok {
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

// podWrite is one Pod write the API server received: who sent it (kwok, else the runtime), its
// verb, its answer and, of a delete answered with the Pod, the Pod's UID.
type podWrite struct {
	kwok      bool
	verb, uid string
	code      int
}

func (w podWrite) String() string {
	who := "runtime"
	if w.kwok {
		who = "kwok"
	}
	return fmt.Sprintf("%s %s %d %s", who, w.verb, w.code, w.uid)
}

// podWritesSince reads from the shared audit log the Pod creates and deletes of ns the API
// server received since a time, by Pod name.
func podWritesSince(t *testing.T, ns string, since time.Time) map[string][]podWrite {
	t.Helper()
	out := map[string][]podWrite{}
	for _, e := range auditEvents(t, sharedAuditLog()) {
		if e.ObjectRef == nil || e.ObjectRef.Resource != "pods" || e.ObjectRef.Subresource != "" || e.ObjectRef.Namespace != ns || e.RequestReceivedTimestamp.Before(since) {
			continue
		}
		w := podWrite{kwok: e.User.Username == "kwok", verb: e.Verb}
		if e.ResponseStatus != nil {
			w.code = e.ResponseStatus.Code
		}
		if e.ResponseObject != nil {
			w.uid = e.ResponseObject.Metadata.UID
		}
		out[e.ObjectRef.Name] = append(out[e.ObjectRef.Name], w)
	}
	return out
}

// replacedOnce says whether a Pod's writes replace it once: exactly one create (201) and one
// delete by the runtime (200, the old Pod, which lingers while its node lets it go), and kwok's
// final deletes, as the node, of that Pod only. kwok may send two at once, both answered 200 with
// the one Pod they removed; its other deletes delete nothing: 404, a stale job for a Pod already
// gone, or 422, the control plane's guard refusing to delete a Pod not being deleted, which is
// the new Pod of the same name. A kubelet sends neither. kwokNoOps counts those.
func replacedOnce(writes []podWrite, kwokNoOps map[string]int) error {
	var creates, deletes, kwokDeletes []podWrite
	for _, w := range writes {
		switch {
		case w.verb == "create":
			creates = append(creates, w)
		case w.verb == "delete" && !w.kwok:
			deletes = append(deletes, w)
		case w.verb == "delete" && w.code == 200:
			kwokDeletes = append(kwokDeletes, w)
		case w.verb == "delete" && (w.code == 404 || w.code == 422):
			kwokNoOps[fmt.Sprintf("kwok delete %d", w.code)]++
		default:
			return fmt.Errorf("unexpected %s", w)
		}
	}
	if len(creates) != 1 || creates[0].code != 201 || len(deletes) != 1 || deletes[0].code != 200 || len(kwokDeletes) == 0 {
		return fmt.Errorf("creates %v, deletes %v, kwok's deletes %v: want one create (201), one delete (200) and kwok's of the deleted Pod", creates, deletes, kwokDeletes)
	}
	for _, w := range kwokDeletes {
		if w.uid != deletes[0].uid {
			return fmt.Errorf("kwok deleted Pod %s, not only the Pod replaced (%s)", w.uid, deletes[0].uid)
		}
	}
	return nil
}

// checkEachPodReplacedOnce checks, from the shared audit log, that since a time each of the n
// MyApps of ns had its Pod deleted and created exactly once (replacedOnce), and that no other Pod
// was written.
func checkEachPodReplacedOnce(t *testing.T, ns string, n int, since time.Time) {
	t.Helper()
	var writes map[string][]podWrite
	eventually(t, 30*time.Second, "the audit log has every Pod replaced", func() error {
		writes = podWritesSince(t, ns, since)
		done := 0
		for _, ws := range writes {
			created, kwokDeleted := false, false
			for _, w := range ws {
				created = created || w.verb == "create" && w.code == 201
				kwokDeleted = kwokDeleted || w.kwok && w.verb == "delete" && w.code == 200
			}
			if created && kwokDeleted {
				done++
			}
		}
		if done < n {
			return fmt.Errorf("%d of %d Pods deleted by kwok and created anew", done, n)
		}
		return nil
	})
	kwokNoOps := map[string]int{}
	var wrong []string
	for i := range n {
		name := fmt.Sprintf("app-%02d-pod", i)
		if err := replacedOnce(writes[name], kwokNoOps); err != nil {
			wrong = append(wrong, name+": "+err.Error())
		}
		delete(writes, name)
	}
	for name, ws := range writes {
		wrong = append(wrong, fmt.Sprintf("%s, not a MyApp's Pod: %v", name, ws))
	}
	t.Logf("kwok's deletes that deleted nothing: %v", kwokNoOps)
	if len(wrong) > 0 {
		sort.Strings(wrong)
		t.Errorf("%d Pods not replaced exactly once:\n%s", len(wrong), strings.Join(wrong, "\n"))
	}
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
