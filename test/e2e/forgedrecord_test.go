//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/rollout"
)

// oneStep rolls MyApp's new versions out in one step to every parent.
func oneStep(p string) string {
	return strings.Replace(p, "spec:\n", "spec:\n  rollout:\n    steps:\n      - percent: 100\n    healthDeadlineSeconds: 60\n", 1)
}

// TestAForgedRolloutRecordDoesNothingButReport forges MyApp's rollout record as someone holding
// the built-in edit role in the policy namespace would: RolledBack, its stable source a version
// of the policy that names its Pods <parent>-pod-forged. Planted before a restart (its stable
// version one the policy had, its source another), and written while the runtime runs (read
// when the policy ConfigMap is re-created), it is not run: the labelled version keeps serving
// the parent, a PolicyRolloutRecordRejected Warning on the policy ConfigMap says why, and the
// record is replaced by the labelled version's.
func TestAForgedRolloutRecordDoesNothingButReport(t *testing.T) {
	policyNS, ns := newNamespace(t, "forged-policies"), newNamespace(t, "forged")
	base := policyConfigMap(t, "myapp", policyNS)
	version := func(tag string) *corev1.ConfigMap {
		return withPolicy(base, chain(oneStep, podNamed(tag), podLabelled(tag)))
	}
	forgedSource := version("forged").Data["myapp.yaml"]
	gens := &generations{}
	o := operator.Options{PolicyNamespace: policyNS, OnReload: gens.set}
	outer, rt := t, startRuntimeWith(t, o)

	applyConfigMap(t, version("v1"))
	create(t, myAppsGVR, sample(t, "myapp", ns))
	waitFor(t, podsGVR, ns, "example-app-pod-v1", wait, nil)
	v1 := waitStableRecord(t, policyNS, `version: "v1"`)
	applyConfigMap(t, version("v2"))
	waitFor(t, podsGVR, ns, "example-app-pod-v2", wait, nil)
	v2 := waitStableRecord(t, policyNS, `version: "v2"`)
	forger := forgerIn(t, policyNS)
	if out, _ := kubectlCmd(t.Context(), "auth", "can-i", "create", "leases.coordination.k8s.io", "-n", policyNS, "--as=forger"); strings.TrimSpace(out) == "yes" {
		t.Log("the edit role may write Leases: a Lease would be no safer a place for the loaded versions than the record")
	}
	forged := rollout.Record{Phase: rollout.RolledBack, Stable: v1.Stable, StableUnit: v1.StableUnit, Target: v2.Stable, Message: "forged"}

	t.Run("planted before a restart: its source is not the stable version it names", func(t *testing.T) {
		rt.stop()
		pod := waitFor(t, podsGVR, ns, "example-app-pod-v2", wait, nil)
		forgeRecord(t, forger, policyNS, forged, forgedSource)
		policyCM := currentConfigMap(t, policyNS, base.Name)
		rt = startRuntimeWith(outer, o) // runs on after this subtest

		note := waitRejected(t, ns, policyNS, policyCM.UID)
		if !strings.Contains(note, "its stored source is version") || !strings.Contains(note, policystatus.ShortVersion(v2.Stable)) {
			t.Errorf("the event does not say the source is not the version it names, nor which version serves: %s", note)
		}
		expectOnlyV2(t, ns, pod.GetUID())
		servedByV2After(t, ns, "after-restart")
		waitStableRecord(t, policyNS, `version: "v2"`)
		waitStatus(t, policyNS, base.Name, "the policy ConfigMap says Running at v2, and that the record was not used", func(cm *corev1.ConfigMap) error {
			if err := inState(policystatus.Running, "rollout record")(cm); err != nil {
				return err
			}
			if got := cm.Labels[contract.LabelPolicyVersion]; got != policystatus.ShortVersion(v2.Stable) {
				return fmt.Errorf("version %q, want v2's %q", got, policystatus.ShortVersion(v2.Stable))
			}
			return nil
		})
	})

	t.Run("written while the runtime runs: its stable version was never loaded here", func(t *testing.T) {
		pod := waitFor(t, podsGVR, ns, "example-app-pod-v2", wait, nil)
		forgeRecord(t, forger, policyNS, forged, forgedSource)
		expectOnlyV2(t, ns, pod.GetUID())
		servedByV2After(t, ns, "while-running")

		// the runtime reads the record when the policy starts again: its ConfigMap deleted and
		// created again (no annotation survives that; this runtime loaded v2 only)
		if err := cluster.kube.CoreV1().ConfigMaps(policyNS).Delete(t.Context(), base.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, wait, "the policy removed", func() error {
			if gens.of("myapp") != 0 {
				return fmt.Errorf("still running")
			}
			return nil
		})
		applyConfigMap(t, version("v2"))
		policyCM := currentConfigMap(t, policyNS, base.Name)

		note := waitRejected(t, ns, policyNS, policyCM.UID)
		if !strings.Contains(note, "was never loaded from the policy's ConfigMap") {
			t.Errorf("the event does not say the record's stable version was never loaded: %s", note)
		}
		expectOnlyV2(t, ns, pod.GetUID())
		servedByV2After(t, ns, "after-recreate")
		waitStableRecord(t, policyNS, `version: "v2"`)
	})
}

// waitStableRecord waits until MyApp's record says Stable, its source holding want, and returns it.
func waitStableRecord(t *testing.T, policyNS, want string) rollout.Record {
	t.Helper()
	var rec rollout.Record
	eventually(t, wait, "the record stable at "+want, func() error {
		var err error
		if rec, err = rolloutRecord(t, policyNS); err != nil || rec.Phase != rollout.Stable || !strings.Contains(rec.StableSource, want) {
			return fmt.Errorf("record %+v: %w", rec, err)
		}
		return nil
	})
	return rec
}

// forgerIn returns a client of a user holding the built-in edit role in namespace, and nothing else.
func forgerIn(t *testing.T, namespace string) kubernetes.Interface {
	t.Helper()
	if out, err := kubectlCmd(t.Context(), "create", "rolebinding", "forger", "-n", namespace, "--clusterrole=edit", "--user=forger"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cfg := rest.CopyConfig(cluster.config)
	cfg.Impersonate.UserName = "forger"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// forgeRecord writes MyApp's rollout record as the forger, with source as its stable source.
func forgeRecord(t *testing.T, forger kubernetes.Interface, policyNS string, rec rollout.Record, source string) {
	t.Helper()
	body, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	configMaps := forger.CoreV1().ConfigMaps(policyNS)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := configMaps.Get(t.Context(), rollout.ConfigMapName("myapp"), metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data = map[string]string{"record.json": string(body), "stable.yaml": source}
		_, err = configMaps.Update(t.Context(), cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("forge the rollout record: %v", err)
	}
}

func currentConfigMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cluster.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// waitRejected waits for the PolicyRolloutRecordRejected Warning on the policy ConfigMap of uid,
// and returns its note; meanwhile no forged Pod may appear.
func waitRejected(t *testing.T, ns, policyNS string, uid types.UID) string {
	t.Helper()
	var note string
	eventually(t, wait, "a PolicyRolloutRecordRejected event on the policy ConfigMap", func() error {
		expectNoForgedPod(t, ns)
		list, err := cluster.kube.EventsV1().Events(policyNS).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.UID == uid && e.Reason == operator.PolicyRolloutRecordRejected && e.Type == corev1.EventTypeWarning {
				note = e.Note
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(list.Items))
	})
	return note
}

// expectOnlyV2 checks that the parent's Pod is v2's, the one of uid, and that no forged Pod exists.
func expectOnlyV2(t *testing.T, ns string, uid types.UID) {
	t.Helper()
	expectNoForgedPod(t, ns)
	pod, err := get(t, podsGVR, ns, "example-app-pod-v2")
	if err != nil || pod.GetUID() != uid || pod.GetDeletionTimestamp() != nil {
		t.Fatalf("v2's Pod was replaced or deleted: %v", err)
	}
}

// expectNoForgedPod checks that the forged version created no Pod.
func expectNoForgedPod(t *testing.T, ns string) {
	t.Helper()
	pods, err := cluster.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "version=forged"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) > 0 {
		t.Fatalf("the forged version created Pod %s", pods.Items[0].Name)
	}
}

// servedByV2After creates a parent named name and waits for v2's Pod of it: the version that
// serves the parents once the forged record exists is v2, never the forged one.
func servedByV2After(t *testing.T, ns, name string) {
	t.Helper()
	app := sample(t, "myapp", ns)
	app.SetName(name)
	create(t, myAppsGVR, app)
	eventually(t, wait, "v2's Pod of "+name, func() error {
		expectNoForgedPod(t, ns)
		_, err := get(t, podsGVR, ns, name+"-pod-v2")
		return err
	})
}
