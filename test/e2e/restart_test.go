//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/operator"
)

// TestARestartOverTheConvergedSeedsWritesNothing runs the five seed policies from their
// ConfigMaps over parents as users have them, edge cases included (a MyApp without an image,
// one whose Pod name an unowned Pod squats, a ConfigMapSync across namespaces), until they
// converge; a runtime started again over them sends no write request: no child, no status,
// not even to learn again that a conflict is still there.
func TestARestartOverTheConvergedSeedsWritesNothing(t *testing.T) {
	policyNS := newNamespace(t, "policies")
	gens := &generations{}
	opts := operator.Options{PolicyNamespace: policyNS, OnReload: gens.set}
	first := startRuntimeWith(t, opts)
	seeds := []string{"myapp", "memcached", "whalesay", "configmapsync", "myingress"}
	for _, name := range seeds {
		applyConfigMap(t, policyConfigMap(t, name, policyNS))
	}
	for _, name := range seeds {
		gens.waitFor(t, name, 1)
	}

	ns, dst := newNamespace(t, "seeds"), newNamespace(t, "seeds-copy")
	create(t, myAppsGVR, sample(t, "myapp", ns))
	noImage := sample(t, "myapp", ns)
	noImage.SetName("no-image")
	unstructured.RemoveNestedField(noImage.Object, "spec", "image")
	create(t, myAppsGVR, noImage)
	squatter := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "squatted-pod", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	if _, err := cluster.kube.CoreV1().Pods(ns).Create(t.Context(), squatter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	squatted := sample(t, "myapp", ns)
	squatted.SetName("squatted")
	create(t, myAppsGVR, squatted)
	create(t, memcachedsGVR, sample(t, "memcached", ns))
	create(t, whaleSaysGVR, sample(t, "whalesay", ns))
	create(t, myIngressesGVR, sample(t, "myingress", ns))
	configMapSync(t, ns, dst)

	waitFor(t, myAppsGVR, ns, "example-app", wait, hasCondition("Ready", "True", "", ""))
	waitFor(t, myAppsGVR, ns, "no-image", wait, hasCondition("Synced", "False", "ValidationFailed", ""))
	waitFor(t, myAppsGVR, ns, "squatted", wait, hasCondition("Synced", "False", "ChildConflict", ""))
	waitFor(t, memcachedsGVR, ns, "memcached-sample", wait, hasCondition("Synced", "True", "", ""))
	waitFor(t, whaleSaysGVR, ns, "example-whalesay", wait, hasCondition("Ready", "True", "", ""))
	waitFor(t, myIngressesGVR, ns, "example-ingress", wait, hasCondition("Synced", "True", "", ""))
	waitFor(t, cmSyncsGVR, ns, "example-sync", wait, hasCondition("Ready", "True", "", ""))
	// converged: the children's own controllers (Deployments, Jobs, kwok) are done too, and so
	// is the runtime (its status writes follow them)
	settled(t, 5*time.Second, time.Minute, quiet(first, ns, dst, policyNS))
	first.stop()

	second := startRuntimeWith(t, opts)
	// quiet while it syncs every parent, and restartQuiet after: its only later syncs are the
	// squatted MyApp's conflict retries (backoff 5 ms, doubling: ten of them by then), and none
	// has an input the earlier ones lacked
	stillQuiet := quiet(second, ns, dst, policyNS)
	parents := map[string]float64{"myapp": 3, "memcached": 1, "whalesay": 1, "myingress": 1, "configmapsync": 1}
	eventually(t, wait, "the restarted runtime synced every parent", func() error {
		if err := stillQuiet(); err != nil {
			t.Fatalf("the restarted runtime writes nothing: %v", err)
		}
		for policy, n := range parents {
			if got := second.reconciles(policy); got < n {
				return fmt.Errorf("%s: %v syncs, want %v", policy, got, n)
			}
		}
		return nil
	})
	consistently(t, restartQuiet, "the restarted runtime writes nothing", stillQuiet)
	if n := second.reconciles("myapp"); n < 3 {
		t.Errorf("the restarted runtime synced %v MyApps, want all 3", n)
	}
}

// restartQuiet is how long a runtime started again over converged parents must stay quiet after
// it has synced them all.
const restartQuiet = 10 * time.Second

// settled waits, up to timeout, until check has held for d in a row.
func settled(t *testing.T, d, timeout time.Duration, check func() error) {
	t.Helper()
	since := time.Now()
	eventually(t, timeout, fmt.Sprintf("%s without a change", d), func() error {
		if err := check(); err != nil {
			since = time.Now()
			return err
		}
		if quietFor := time.Since(since); quietFor < d {
			return fmt.Errorf("quiet for %s only", quietFor.Round(time.Millisecond))
		}
		return nil
	})
}

// quiet checks that a runtime has made no write to the namespaces since the check was made,
// and that it has made none at all after the first call's: neither to the policies' objects nor
// to its own records (the policies' status, rollout records, memos, events), but for the Leases
// it renews.
func quiet(rt *metacel, namespaces ...string) func() error {
	var before map[string]int64
	return func() error {
		now := rt.writesSince(nil)
		rt.bookkept.Range(func(k, v any) bool {
			if path := k.(string); !strings.Contains(path, "/leases/") {
				now[path] += v.(*atomic.Int64).Load()
			}
			return true
		})
		if before == nil {
			before = now
		}
		var writes []string
		for path, n := range now {
			for _, ns := range namespaces {
				if strings.Contains(path, "/namespaces/"+ns+"/") && n > before[path] {
					writes = append(writes, fmt.Sprintf("%s (%d)", path, n-before[path]))
				}
			}
		}
		if len(writes) > 0 {
			before = now
			return fmt.Errorf("writes: %s", strings.Join(writes, ", "))
		}
		return nil
	}
}
