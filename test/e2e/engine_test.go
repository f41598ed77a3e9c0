//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/memo"
	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/rollout"
)

var widgetsGVR = schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "widgets"}

func widget(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"color": "blue"},
	}}
}

// TestIdleResyncWritesNothing converges 100 parents, then lets the runtime re-sync all of them
// (the policy asks for a re-sync every second) and counts the writes it makes meanwhile.
func TestIdleResyncWritesNothing(t *testing.T) {
	rt := startRuntime(t, filepath.Join("testdata", "policies", "resync"))
	ns := newNamespace(t, "resync")
	const parents = 100
	for i := range parents {
		create(t, widgetsGVR, widget(ns, fmt.Sprintf("w%03d", i)))
	}
	waitWidgetsConverged(t, ns, parents)
	// let in-flight syncs settle: converged means a full re-sync round already passed with no write
	before := rt.reconciles("widget")
	eventually(t, time.Minute, "a first idle re-sync round", func() error {
		if rt.reconciles("widget") < before+parents {
			return fmt.Errorf("%v syncs since", rt.reconciles("widget")-before)
		}
		return nil
	})
	writes, syncs := rt.writes.Load(), rt.reconciles("widget")
	paths := rt.writeCounts()
	eventually(t, time.Minute, "two more re-sync rounds", func() error {
		if done := rt.reconciles("widget") - syncs; done < 2*parents {
			return fmt.Errorf("%v syncs so far", done)
		}
		return nil
	})
	// writes about this test's parents only: the runtime also serves what earlier tests leave
	// behind in namespaces being deleted
	var extra int64
	for path, n := range rt.writesSince(paths) {
		if strings.Contains(path, "/namespaces/"+ns+"/") {
			extra += n
		}
	}
	if extra != 0 {
		t.Errorf("idle re-syncs of %d converged parents made %d writes, want 0: %v", parents, extra, rt.writesSince(paths))
	}
	t.Logf("%v idle syncs, %d writes", rt.reconciles("widget")-syncs, rt.writes.Load()-writes)
}

// waitWidgetsConverged waits until a namespace's n Widgets are Ready and blue.
func waitWidgetsConverged(t *testing.T, ns string, n int) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%d widgets converge", n), func() error {
		list, err := cluster.dynamic.Resource(widgetsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for i := range list.Items {
			if hasCondition("Ready", "True", "", "")(&list.Items[i]) == nil && str(&list.Items[i], "status", "color") == "blue" {
				ready++
			}
		}
		if ready < n {
			return fmt.Errorf("%d of %d ready", ready, n)
		}
		return nil
	})
}

// widgetsOfThisTest returns the options of a runtime whose widget policy (the resync one) selects
// only the widgets labelled for ns, with its own policy namespace, and the widget maker: the
// renders it counts are then this test's, not those of other tests' widgets still being deleted.
func widgetsOfThisTest(t *testing.T, ns string) (operator.Options, func(name string) *unstructured.Unstructured) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "policies", "resync", "widget.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const parent = "    resource: widgets\n"
	text := strings.Replace(string(data), parent, parent+"    labelSelector: {matchLabels: {e2e.metacel.dev/test: "+ns+"}}\n", 1)
	if text == string(data) {
		t.Fatal("the widget policy names no parent resource to select")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "widget.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := operator.Options{PolicyDirs: []string{dir}, PolicyNamespace: newNamespace(t, "policies")}
	return opts, func(name string) *unstructured.Unstructured {
		w := widget(ns, name)
		w.SetLabels(map[string]string{"e2e.metacel.dev/test": ns})
		return w
	}
}

// TestARestartOverConvergedParentsWritesNothing: a runtime started again over the parents it
// converged syncs every one of them and writes nothing: no child, no status, and not the policy's
// rollout record either (a policy without spec.rollout wrote it again at every start). It renders
// none of them either: the memo the first runtime saved when it stopped says they converged.
func TestARestartOverConvergedParentsWritesNothing(t *testing.T) {
	ns := newNamespace(t, "restart")
	opts, widget := widgetsOfThisTest(t, ns)
	policyNS := opts.PolicyNamespace
	first := startRuntimeWith(t, opts)
	const parents = 20
	for i := range parents {
		create(t, widgetsGVR, widget(fmt.Sprintf("w%03d", i)))
	}
	waitWidgetsConverged(t, ns, parents)
	record := "/api/v1/namespaces/" + policyNS + "/configmaps/" + rollout.ConfigMapName("widget")
	if first.bookkeepingWritesTo(record) == 0 {
		t.Fatalf("the first runtime wrote no rollout record at %s", record)
	}
	// converged on the API server is not idle in the runtime: the events of its last writes (a
	// child's add seen before its parent's status update) may still be syncing, and a sync that
	// the stop cancels is not in the memo. Wait for a whole re-sync round with no render.
	rendered, synced := first.renders("widget"), first.reconciles("widget")
	eventually(t, time.Minute, "the first runtime re-syncs every parent without a render", func() error {
		n := first.reconciles("widget") // before the renders: a render since shows there
		if r := first.renders("widget"); r != rendered {
			rendered, synced = r, n
			return fmt.Errorf("%d renders so far", r)
		}
		if n-synced < parents {
			return fmt.Errorf("%v syncs since the last render", n-synced)
		}
		return nil
	})
	first.stop()

	second := startRuntimeWith(t, opts)
	eventually(t, time.Minute, "the restarted runtime syncs every parent", func() error {
		if n := second.reconciles("widget"); n < parents {
			return fmt.Errorf("%v syncs", n)
		}
		return nil
	})
	for path, n := range second.writesSince(nil) {
		if strings.Contains(path, "/namespaces/"+ns+"/") {
			t.Errorf("the restarted runtime wrote %s %d times, want none", path, n)
		}
	}
	if n := second.bookkeepingWritesTo(record); n != 0 {
		t.Errorf("the restarted runtime wrote the rollout record it holds %d times, want 0", n)
	}
	if n := second.renders("widget"); n != 0 {
		t.Errorf("the restarted runtime rendered %d parents, want none: its memo says all %d converged", n, parents)
	}
	memoPath := "/api/v1/namespaces/" + policyNS + "/configmaps/" + memo.ConfigMapName("widget")
	if n := first.bookkeepingWritesTo(memoPath); n != 1 {
		t.Errorf("the first runtime wrote its memo %d times, want once (when it stopped)", n)
	}
	second.stop()
	if n := second.bookkeepingWritesTo(memoPath); n != 0 {
		t.Errorf("the restarted runtime wrote the memo it recalled %d times, want 0", n)
	}
}

// TestADriftWhileStoppedIsRevertedAfterARestart: a child edited and another deleted while the
// runtime is down are put back when it starts again, though its memo says the parents had
// converged: their inputs are no longer those the memo has. The others are not rendered.
func TestADriftWhileStoppedIsRevertedAfterARestart(t *testing.T) {
	ns := newNamespace(t, "drift")
	opts, widget := widgetsOfThisTest(t, ns)
	first := startRuntimeWith(t, opts)
	const parents = 6
	for i := range parents {
		create(t, widgetsGVR, widget(fmt.Sprintf("w%d", i)))
	}
	waitWidgetsConverged(t, ns, parents)
	first.stop()

	edited, err := get(t, configMapsGVR, ns, "w0-widget")
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(edited.Object, "red", "data", "color"); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.dynamic.Resource(configMapsGVR).Namespace(ns).Update(t.Context(), edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteObj(t, configMapsGVR, ns, "w1-widget")

	second := startRuntimeWith(t, opts)
	waitFor(t, configMapsGVR, ns, "w0-widget", wait, hasData("color", "blue"))
	waitFor(t, configMapsGVR, ns, "w1-widget", wait, hasData("color", "blue"))
	eventually(t, time.Minute, "the restarted runtime syncs every parent", func() error {
		if n := second.reconciles("widget"); n < parents {
			return fmt.Errorf("%v syncs", n)
		}
		return nil
	})
	if n := second.renders("widget"); n < 2 || n >= parents {
		t.Errorf("the restarted runtime rendered %d parents, want the 2 that drifted (and their echoes) but not all %d", n, parents)
	}
}

// TestConflictIsReportedNotTakenOver: an object with a child's name that metacel does not manage
// is left untouched and reported on the parent.
func TestConflictIsReportedNotTakenOver(t *testing.T) {
	startRuntime(t, filepath.Join("testdata", "policies", "resync"))
	ns := newNamespace(t, "conflict")
	squatter := create(t, configMapsGVR, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "taken-widget", "namespace": ns},
		"data":     map[string]any{"owner": "someone else"},
	}})
	create(t, widgetsGVR, widget(ns, "taken"))
	waitFor(t, widgetsGVR, ns, "taken", wait, hasCondition("Synced", "False", "ChildConflict", ""))
	cm, err := get(t, configMapsGVR, ns, "taken-widget")
	if err != nil {
		t.Fatal(err)
	}
	if cm.GetResourceVersion() != squatter.GetResourceVersion() || str(cm, "data", "owner") != "someone else" || len(cm.GetLabels()) != 0 {
		t.Errorf("the unowned object was modified: %v", cm.Object)
	}

	t.Run("the parent recovers once the object is gone", func(t *testing.T) {
		deleteObj(t, configMapsGVR, ns, "taken-widget")
		waitFor(t, widgetsGVR, ns, "taken", 2*time.Minute, hasCondition("Synced", "True", "", ""))
		waitFor(t, configMapsGVR, ns, "taken-widget", wait, hasData("color", "blue"))
	})
}

// TestBuiltInParent: a policy whose parent is a built-in kind (Namespace), with a label selector.
func TestBuiltInParent(t *testing.T) {
	startRuntime(t, filepath.Join("testdata", "policies", "namespaces"))
	labelled := newNamespace(t, "welcome")
	other := newNamespace(t, "plain")
	nsObj, err := cluster.kube.CoreV1().Namespaces().Get(t.Context(), labelled, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["metacel.dev/e2e-welcome"] = "true"
	if _, err := cluster.kube.CoreV1().Namespaces().Update(t.Context(), nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := waitFor(t, configMapsGVR, labelled, "welcome", wait, hasData("message", "Welcome to "+labelled))
	if refs := cm.GetOwnerReferences(); len(refs) != 1 || refs[0].Kind != "Namespace" {
		t.Errorf("ownerReferences: %v", refs)
	}
	if _, err := cluster.kube.CoreV1().ConfigMaps(other).Get(t.Context(), "welcome", metav1.GetOptions{}); err == nil {
		t.Error("a namespace without the label must get no ConfigMap")
	}
	_ = corev1.NamespaceActive
}

// TestMetricsEndpoint scrapes /metrics after a sync: the reconcile, workqueue, client and CEL
// metrics are there with non-zero values.
func TestMetricsEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	startRuntimeWith(t, operator.Options{PolicyDirs: []string{filepath.Join("testdata", "policies", "resync")}, MetricsAddr: addr})
	ns := newNamespace(t, "metrics")
	create(t, widgetsGVR, widget(ns, "m"))
	waitFor(t, widgetsGVR, ns, "m", wait, hasCondition("Ready", "True", "", ""))
	want := []string{
		`controller_runtime_reconcile_total{controller="widget",result="success"}`,
		`controller_runtime_reconcile_time_seconds_count{controller="widget"}`,
		`workqueue_adds_total{controller="widget",name="widget"}`,
		`workqueue_work_duration_seconds_count{controller="widget",name="widget"}`,
		`rest_client_requests_total{code="200",`,
		`metacel_cel_eval_duration_seconds_count{policy="widget"}`,
		`metacel_policy_info{generation="1",policy="widget",`,
		`metacel_informers`,
	}
	eventually(t, 10*time.Second, "metrics with non-zero values", func() error {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		for _, w := range want {
			if !hasNonZero(string(body), w) {
				return fmt.Errorf("no non-zero %s", w)
			}
		}
		return nil
	})
}

// hasNonZero reports whether a scrape has a sample starting with prefix and a value other than 0.
func hasNonZero(scrape, prefix string) bool {
	for _, line := range strings.Split(scrape, "\n") {
		if strings.HasPrefix(line, prefix) {
			fields := strings.Fields(line)
			if v := fields[len(fields)-1]; v != "0" {
				return true
			}
		}
	}
	return false
}
