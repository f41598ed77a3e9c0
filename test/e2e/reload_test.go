//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/rollout"
)

// generations records the running policies after each reload, for tests to wait on.
type generations struct {
	mu      sync.Mutex
	running map[string]int
}

func (g *generations) set(running map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running = running
}

func (g *generations) of(policy string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running[policy]
}

func (g *generations) waitFor(t *testing.T, policy string, generation int) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("policy %q at generation %d", policy, generation), func() error {
		if got := g.of(policy); got != generation {
			return fmt.Errorf("generation %d", got)
		}
		return nil
	})
}

// policyConfigMap reads policies/<name>.yaml (a ConfigMap) and moves it to namespace ns, where
// it creates the ServiceAccount the policy acts as (grantPolicies).
func policyConfigMap(t *testing.T, name, ns string) *corev1.ConfigMap {
	t.Helper()
	return policyConfigMapOn(t, cluster.kube, name, ns)
}

// policyConfigMapOn is policyConfigMap on the cluster of kube.
func policyConfigMapOn(t *testing.T, kube kubernetes.Interface, name, ns string) *corev1.ConfigMap {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "policies", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.Unmarshal(data, cm); err != nil {
		t.Fatal(err)
	}
	cm.Namespace = ns
	grantPoliciesOn(t, kube, ns, filepath.Join(repo, "policies", name+".yaml"))
	return cm
}

// An update that conflicts is tried again on the newest version: the runtime's policy-status
// writer labels and annotates the same ConfigMap after each load (kubectl apply would patch).
func applyConfigMap(t testing.TB, cm *corev1.ConfigMap) {
	t.Helper()
	configMaps := cluster.kube.CoreV1().ConfigMaps(cm.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		existing, err := configMaps.Get(t.Context(), cm.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = configMaps.Create(t.Context(), cm, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		existing.Data = cm.Data
		_, err = configMaps.Update(t.Context(), existing, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("apply ConfigMap %s: %v", cm.Name, err)
	}
}

// withPolicy returns a copy of the ConfigMap whose policy text went through edit.
func withPolicy(cm *corev1.ConfigMap, edit func(string) string) *corev1.ConfigMap {
	out := cm.DeepCopy()
	for k, v := range out.Data {
		out.Data[k] = edit(v)
	}
	return out
}

// podLabelled edits MyApp's policy to label its Pods version=<v>, next to their app label.
func podLabelled(v string) func(string) string {
	return func(p string) string {
		const app = `app: "${parent.metadata.name}"`
		i := strings.Index(p, app)
		if i < 0 {
			return p
		}
		indent := i - (strings.LastIndex(p[:i], "\n") + 1)
		return p[:i+len(app)] + "\n" + strings.Repeat(" ", indent) + `version: "` + v + `"` + p[i+len(app):]
	}
}

// policyAnnotated edits a policy's text to carry annotation ("key: value") on its own metadata.
func policyAnnotated(p, annotation string) string {
	const name = "\nmetadata:\n  name: myapp\n"
	return strings.Replace(p, name, "\nmetadata:\n  annotations: {"+annotation+"}\n  name: myapp\n", 1)
}

// podVersions returns the resourceVersion of each MyApp Pod of a namespace by name.
func podVersions(t *testing.T, ns string) map[string]string {
	return myAppPodsBy(t, ns, func(p *corev1.Pod) string { return p.ResourceVersion })
}

// recordVersion returns the resourceVersion of MyApp's rollout record in ns.
func recordVersion(t *testing.T, ns string) string {
	t.Helper()
	cm, err := cluster.kube.CoreV1().ConfigMaps(ns).Get(t.Context(), rollout.ConfigMapName("myapp"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm.ResourceVersion
}

// podUIDs returns the UID of each MyApp Pod of a namespace by name, with its version label.
func podUIDs(t *testing.T, ns string) map[string]string {
	return myAppPodsBy(t, ns, func(p *corev1.Pod) string { return string(p.UID) + "@" + p.Labels["version"] })
}

// myAppPodsBy returns value of each MyApp Pod of a namespace not being deleted, by name.
func myAppPodsBy(t *testing.T, ns string, value func(*corev1.Pod) string) map[string]string {
	t.Helper()
	pods, err := cluster.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "metacel.dev/policy=myapp"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.DeletionTimestamp == nil {
			out[p.Name] = value(p)
		}
	}
	return out
}

func TestHotReloadFromConfigMap(t *testing.T) {
	policyNS := newNamespace(t, "policies")
	gens := &generations{}
	rt := startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS, OnReload: gens.set})
	untrusted := policyConfigMap(t, "whalesay", newNamespace(t, "untrusted"))
	applyConfigMap(t, untrusted) // labelled, but outside the policy namespace
	cm := policyConfigMap(t, "myapp", policyNS)
	applyConfigMap(t, cm)
	gens.waitFor(t, "myapp", 1)
	waitEvent(t, policyNS, cm.Name, "PolicyLoaded")
	expectEqual(t, "a labelled ConfigMap in another namespace is ignored: whalesay's generation", gens.of("whalesay"), 0)

	ns := newNamespace(t, "reload")
	const parents = 50
	for i := range parents {
		app := sample(t, "myapp", ns)
		app.SetName(fmt.Sprintf("app-%02d", i))
		create(t, myAppsGVR, app)
	}
	podsAt := func(version string) func() error {
		return func() error {
			n := 0
			for _, v := range podUIDs(t, ns) {
				if strings.HasSuffix(v, "@"+version) {
					n++
				}
			}
			if n < parents {
				return fmt.Errorf("%d of %d Pods at version %q", n, parents, version)
			}
			return nil
		}
	}
	eventually(t, 2*time.Minute, "50 Pods", podsAt(""))

	t.Run("a changed policy re-renders every child", func(t *testing.T) {
		start := time.Now()
		applyConfigMap(t, withPolicy(cm, podLabelled("v2")))
		eventually(t, 10*time.Second, "a first Pod at v2", func() error {
			for _, v := range podUIDs(t, ns) {
				if strings.HasSuffix(v, "@v2") {
					return nil
				}
			}
			return fmt.Errorf("none yet")
		})
		first := time.Since(start)
		eventually(t, 10*time.Second, "every Pod at v2", podsAt("v2"))
		t.Logf("policy applied -> first child updated in %s, all %d in %s", first.Round(time.Millisecond), parents, time.Since(start).Round(time.Millisecond))
		gens.waitFor(t, "myapp", 2)
	})
	t.Run("an annotation the runtime does not read is the same version: nothing restarts, nothing is written", func(t *testing.T) {
		// the Pods the change replaced are bound and started first: the scheduler's and the kwok
		// node's writes are not the runtime's
		eventually(t, 30*time.Second, "every Pod running", func() error {
			for name, phase := range myAppPodsBy(t, ns, func(p *corev1.Pod) string { return string(p.Status.Phase) }) {
				if phase != string(corev1.PodRunning) {
					return fmt.Errorf("%s is %q", name, phase)
				}
			}
			return nil
		})
		pods, record := podVersions(t, ns), recordVersion(t, policyNS)
		before := metricValue(rt, "metacel_policy_same_version_loads_total", "myapp")
		annotated := withPolicy(cm, func(p string) string { return policyAnnotated(podLabelled("v2")(p), "team: payments") })
		if fmt.Sprint(annotated.Data) == fmt.Sprint(withPolicy(cm, podLabelled("v2")).Data) {
			t.Fatal("the policy's metadata was not found to annotate")
		}
		applyConfigMap(t, annotated)
		eventually(t, 10*time.Second, "the load found the running version", func() error {
			if got := metricValue(rt, "metacel_policy_same_version_loads_total", "myapp"); got <= before {
				return fmt.Errorf("metacel_policy_same_version_loads_total{policy=myapp} = %v", got)
			}
			return nil
		})
		expectEqual(t, "generation", gens.of("myapp"), 2)
		expectEqual(t, "the Pods' resourceVersions", fmt.Sprint(podVersions(t, ns)), fmt.Sprint(pods))
		expectEqual(t, "the rollout record's resourceVersion", recordVersion(t, policyNS), record)
	})
	for _, broken := range []struct{ name, text string }{
		{"bad CEL", `name: "${parent.metadata.name + }-pod"`},
		{"bad YAML", "name: [unclosed"},
	} {
		t.Run("a broken version ("+broken.name+") changes nothing", func(t *testing.T) {
			before := podUIDs(t, ns)
			errorsBefore := metricValue(rt, "metacel_policy_load_errors_total", "myapp")
			applyConfigMap(t, withPolicy(cm, func(p string) string {
				return strings.Replace(podLabelled("v2")(p), `name: "${parent.metadata.name}-pod"`, broken.text, 1)
			}))
			eventually(t, 10*time.Second, "the load error is counted", func() error {
				if got := metricValue(rt, "metacel_policy_load_errors_total", "myapp"); got <= errorsBefore {
					return fmt.Errorf("metacel_policy_load_errors_total{policy=myapp} = %v", got)
				}
				return nil
			})
			if note := waitEvent(t, policyNS, cm.Name, "PolicyInvalid"); !strings.Contains(note, "configmap/"+policyNS+"/"+cm.Name+"/myapp.yaml:") {
				t.Errorf("the event must name the file and line: %s", note)
			}
			expectEqual(t, "generation", gens.of("myapp"), 2)
			if after := podUIDs(t, ns); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Error("a broken policy changed the children")
			}
		})
	}
	t.Run("a good version after broken ones is picked up", func(t *testing.T) {
		applyConfigMap(t, withPolicy(cm, podLabelled("v3")))
		gens.waitFor(t, "myapp", 3)
		eventually(t, 10*time.Second, "every Pod at v3", podsAt("v3"))
	})
	t.Run("deleting the policy stops it and deletes no child", func(t *testing.T) {
		before := podUIDs(t, ns)
		if err := cluster.kube.CoreV1().ConfigMaps(policyNS).Delete(t.Context(), cm.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		gens.waitFor(t, "myapp", 0)
		late := sample(t, "myapp", ns)
		late.SetName("late")
		create(t, myAppsGVR, late)
		consistently(t, 3*time.Second, "no Pod for a parent created after the policy was removed", func() error {
			if _, err := get(t, podsGVR, ns, "late-pod"); err == nil {
				return fmt.Errorf("late-pod exists")
			}
			return nil
		})
		if after := podUIDs(t, ns); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Error("removing the policy changed the children")
		}
	})
}

func TestHotReloadFromDirectory(t *testing.T) {
	dir := t.TempDir()
	mounted := filepath.Join(dir, "mounted") // a ConfigMap volume as the kubelet writes it
	plain := filepath.Join(dir, "plain")     // an ordinary directory edited in place
	for _, d := range []string{mounted, plain} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	widgetPolicy, err := os.ReadFile(filepath.Join("testdata", "policies", "resync", "widget.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	version := func(v string) []byte {
		return []byte(strings.Replace(string(widgetPolicy), `color: "${parent.spec.?color.orValue('none')}"`,
			`color: "${parent.spec.?color.orValue('none')}"`+"\n          version: "+v, 1))
	}
	kubeletWrite(t, mounted, "widget.yaml", version("m1"))
	gens := &generations{}
	startRuntimeWith(t, operator.Options{PolicyDirs: []string{mounted, plain}, OnReload: gens.set})
	gens.waitFor(t, "widget", 1)
	ns := newNamespace(t, "dir")
	create(t, widgetsGVR, widget(ns, "a"))
	waitFor(t, configMapsGVR, ns, "a-widget", wait, hasData("version", "m1"))

	t.Run("the kubelet's ..data swap", func(t *testing.T) {
		kubeletWrite(t, mounted, "widget.yaml", version("m2"))
		waitFor(t, configMapsGVR, ns, "a-widget", 10*time.Second, hasData("version", "m2"))
		gens.waitFor(t, "widget", 2)
	})
	t.Run("a policy moved to an in-place edited file", func(t *testing.T) {
		kubeletWrite(t, mounted, "other.yaml", []byte("# no policy here\n"))
		if err := os.WriteFile(filepath.Join(plain, "widget.yaml"), version("p1"), 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, configMapsGVR, ns, "a-widget", 10*time.Second, hasData("version", "p1"))
		if err := os.WriteFile(filepath.Join(plain, "widget.yaml"), version("p2"), 0o644); err != nil {
			t.Fatal(err)
		}
		waitFor(t, configMapsGVR, ns, "a-widget", 10*time.Second, hasData("version", "p2"))
	})
	t.Run("an editor that saves through a rename", func(t *testing.T) {
		tmp := filepath.Join(plain, ".widget.yaml.swp")
		if err := os.WriteFile(tmp, version("p3"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(plain, "widget.yaml")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, configMapsGVR, ns, "a-widget", 10*time.Second, hasData("version", "p3"))
	})
}

// kubeletWrite replaces the files of a mounted ConfigMap volume the way the kubelet does: a new
// timestamped directory, a ..data symlink swapped atomically, the old directory removed.
func kubeletWrite(t *testing.T, dir, file string, data []byte) {
	t.Helper()
	stamp := fmt.Sprintf("..%d", time.Now().UnixNano())
	if err := os.Mkdir(filepath.Join(dir, stamp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stamp, file), data, 0o644); err != nil {
		t.Fatal(err)
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(stamp, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, file)
	if _, err := os.Lstat(link); err != nil {
		if err := os.Symlink(filepath.Join("..data", file), link); err != nil {
			t.Fatal(err)
		}
	}
	// the files of the old version disappear: the kubelet writes the whole ConfigMap each time
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.Name() != file {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	if old != "" {
		_ = os.RemoveAll(filepath.Join(dir, old))
	}
}

// TestReloadCyclesDoNotLeak reloads a policy 100 times and checks that goroutines and informers
// return to their baseline.
func TestReloadCyclesDoNotLeak(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "widget.yaml")
	base, err := os.ReadFile(filepath.Join("testdata", "policies", "resync", "widget.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// each version differs where it matters (a comment would not change the policy)
	write := func(i int) {
		text := strings.Replace(string(base), "resyncPeriodSeconds: 1", fmt.Sprintf("resyncPeriodSeconds: %d", 100+i), 1)
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	gens := &generations{}
	rt := startRuntimeWith(t, operator.Options{PolicyDirs: []string{dir}, OnReload: gens.set})
	gens.waitFor(t, "widget", 1)
	ns := newNamespace(t, "leak")
	create(t, widgetsGVR, widget(ns, "a"))
	waitFor(t, configMapsGVR, ns, "a-widget", wait, nil)
	baseGoroutines, baseInformers := settledGoroutines(), metricValue(rt, "metacel_informers", "")

	for i := 1; i <= 100; i++ {
		write(i)
		gens.waitFor(t, "widget", i+1)
	}
	expectEqual(t, "informers", metricValue(rt, "metacel_informers", ""), baseInformers)
	eventually(t, 30*time.Second, "goroutines back to their baseline", func() error {
		if n := settledGoroutines(); n > baseGoroutines+5 {
			return fmt.Errorf("%d goroutines, baseline %d", n, baseGoroutines)
		}
		return nil
	})
	t.Logf("after 100 reloads: %d goroutines (baseline %d), %v informers (baseline %v)",
		settledGoroutines(), baseGoroutines, metricValue(rt, "metacel_informers", ""), baseInformers)
}

func settledGoroutines() int {
	runtime.GC()
	return runtime.NumGoroutine()
}

// metricValue sums a metric's values, over the series whose policy label is policy ("" for all).
func metricValue(rt *metacel, name, policy string) float64 {
	return registryValue(rt.registry, name, policy)
}

// registryValue sums a metric's values in a registry, over the series whose policy label is
// policy ("" for all).
func registryValue(reg prometheus.Gatherer, name, policy string) float64 {
	families, _ := reg.Gather()
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			match := policy == ""
			for _, l := range m.GetLabel() {
				match = match || (l.GetName() == "policy" && l.GetValue() == policy)
			}
			if match {
				total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return total
}

// consistently checks that check holds for a while (polling every 100ms).
func consistently(t *testing.T, d time.Duration, what string, check func() error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if err := check(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// TestPolicyWaitsForItsCRD loads a policy whose parent CRD does not exist yet: it waits, and
// starts when the CRD is installed.
func TestPolicyWaitsForItsCRD(t *testing.T) {
	gens := &generations{}
	startRuntimeWith(t, operator.Options{PolicyDirs: []string{filepath.Join("testdata", "policies", "late")}, OnReload: gens.set})
	expectEqual(t, "generation before the CRD exists", gens.of("gadget"), 0)
	if out, err := kubectlCmd(t.Context(), "apply", "-f", filepath.Join("testdata", "late", "gadget-crd.yaml")); err != nil {
		t.Fatalf("install the Gadget CRD: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = kubectlCmd(context.Background(), "delete", "-f", filepath.Join("testdata", "late", "gadget-crd.yaml"))
	})
	gens.waitFor(t, "gadget", 1)
	ns := newNamespace(t, "late")
	gadgets := schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "gadgets"}
	create(t, gadgets, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g", "namespace": ns},
		"spec":     map[string]any{"size": int64(3)},
	}})
	waitFor(t, configMapsGVR, ns, "g-gadget", wait, hasData("size", "3"))
}

// TestPolicyAfterItsCRD installs a CRD while the runtime runs, then its policy: the runtime's
// discovery predates the CRD, and the policy must load all the same.
func TestPolicyAfterItsCRD(t *testing.T) {
	dir := t.TempDir()
	// a running policy: the runtime has read discovery before the CRD exists
	if err := os.WriteFile(filepath.Join(dir, "widget.yaml"), []byte(readFile(t, filepath.Join("testdata", "policies", "resync", "widget.yaml"))), 0o644); err != nil {
		t.Fatal(err)
	}
	gens := &generations{}
	startRuntimeWith(t, operator.Options{PolicyDirs: []string{dir}, OnReload: gens.set})
	gens.waitFor(t, "widget", 1)
	crd := filepath.Join("testdata", "late", "sprocket-crd.yaml")
	if out, err := kubectlCmd(t.Context(), "apply", "-f", crd); err != nil {
		t.Fatalf("install the Sprocket CRD: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectlCmd(context.Background(), "delete", "-f", crd) })
	waitFor(t, crdsGVR, "", "sprockets.e2e.metacel.dev", wait, established)
	policyText := strings.NewReplacer("gadgets", "sprockets", "gadget", "sprocket", "parent.spec.size", "parent.spec.teeth").
		Replace(readFile(t, filepath.Join("testdata", "policies", "late", "gadget.yaml")))
	if err := os.WriteFile(filepath.Join(dir, "sprocket.yaml"), []byte(policyText), 0o644); err != nil {
		t.Fatal(err)
	}
	gens.waitFor(t, "sprocket", 1)
	ns := newNamespace(t, "sprocket")
	create(t, schema.GroupVersionResource{Group: "e2e.metacel.dev", Version: "v1", Resource: "sprockets"}, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.metacel.dev/v1", "kind": "Sprocket",
		"metadata": map[string]any{"name": "s", "namespace": ns},
		"spec":     map[string]any{"teeth": int64(12)},
	}})
	waitFor(t, configMapsGVR, ns, "s-sprocket", wait, hasData("size", "12"))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
