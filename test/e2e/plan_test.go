//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/plan"
)

// TestPlan previews changes of the MyApp policy running on 100 parents with `metacel plan`: a new
// label on the Pod template recreates the 100 Pods (exit 0); a priority class the API server
// does not know fails every parent, named with the error (exit 1). Neither makes a write: the objects'
// resourceVersions and the API server's counters of writes that are no dry runs do not move, while
// its counter of dry-run creates of Pods does.
func TestPlan(t *testing.T) {
	const parents = 100
	policyNS := newNamespace(t, "plan-policies")
	rt := startRuntimeWith(t, operator.Options{PolicyNamespace: policyNS})
	cm := policyConfigMap(t, "myapp", policyNS)
	applyConfigMap(t, cm)
	ns := newNamespace(t, "plan")
	for i := range parents {
		p := sample(t, "myapp", ns)
		p.SetName(fmt.Sprintf("app-%03d", i))
		create(t, myAppsGVR, p)
	}
	waitAllReady(t, ns, parents)
	rt.stop() // nothing but the plans may act on these objects from now on

	bin := buildMetacel(t)
	policyText := readFile(t, filepath.Join(repo, "policies", "myapp.yaml"))
	candidate := func(name, text string) []string {
		return []string{"plan", writeTemp(t, name, []byte(text)), "--kubeconfig", cluster.kubeconfig, "--namespace", policyNS}
	}
	versions, requests := resourceVersions(t, ns, policyNS), apiRequests(t)

	t.Run("a new Pod label recreates the 100 Pods", func(t *testing.T) {
		args := candidate("labelled.yaml", podLabelled("v2")(policyText))
		out, err := exec.CommandContext(t.Context(), bin, append(args, "-o", "json")...).Output()
		if err != nil {
			t.Fatalf("plan -o json: %v\n%s", err, stderrOf(err))
		}
		var p plan.Plan
		if err := json.Unmarshal(out, &p); err != nil {
			t.Fatalf("plan -o json: %v\n%s", err, out)
		}
		if want := (plan.Totals{Parents: parents, Changed: parents, Recreated: parents}); p.Totals != want {
			t.Errorf("totals %+v, want %+v", p.Totals, want)
		}
		if p.Running != "configmap/"+policyNS+"/policy-myapp/myapp.yaml" {
			t.Errorf("compared with %q, want the policy's ConfigMap", p.Running)
		}
		for _, parent := range p.Parents {
			if len(parent.Children) != 1 || !isLabelRecreate(parent.Children[0], parent.Name+"-pod") {
				t.Errorf("%s: %+v, want a disruptive recreation of its Pod, labelled version v2", parent, parent.Children)
			}
		}
		text, err := exec.CommandContext(t.Context(), bin, args...).Output()
		if want := "\n100 parents, 100 changed: 0 created, 0 updated, 100 recreated, 0 deleted, 0 released, 0 failing\n"; err != nil || !strings.HasSuffix(string(text), want) {
			t.Errorf("plan: %v, want exit 0 and the totals %q; got:\n%s", err, want, tail(string(text), 30))
		}
	})
	t.Run("a priority class the API server does not know fails every parent, named", func(t *testing.T) {
		// valid offline (a port out of range is refused at load): only the API server's Priority
		// admission knows that no such class exists
		unknownClass := strings.Replace(policyText, "              containers:\n", "              priorityClassName: metacel-nowhere\n              containers:\n", 1)
		out, err := exec.CommandContext(t.Context(), bin, candidate("priority.yaml", unknownClass)...).Output()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("plan: %v, want exit code 1\n%s", err, tail(string(out), 30))
		}
		text := string(out)
		for i := range parents {
			name := fmt.Sprintf("app-%03d", i)
			if !strings.Contains(text, fmt.Sprintf("MyApp %s/%s:\n", ns, name)) {
				t.Errorf("the output does not name %s", name)
			}
		}
		if n := strings.Count(text, "FAILING: dry run of recreate v1 Pod "); n != parents {
			t.Errorf("%d failing parents, want %d:\n%s", n, parents, tail(text, 30))
		}
		if !strings.Contains(text, `no PriorityClass with name metacel-nowhere was found`) {
			t.Errorf("the API server's error is not shown:\n%s", tail(text, 30))
		}
		if !strings.HasSuffix(text, "100 recreated, 0 deleted, 0 released, 100 failing\n") {
			t.Errorf("totals:\n%s", tail(text, 30))
		}
	})

	t.Run("no write", func(t *testing.T) {
		after := resourceVersions(t, ns, policyNS)
		for k, v := range versions {
			if after[k] != v {
				t.Errorf("%s: resourceVersion %s → %q", k, v, after[k])
			}
		}
		if len(after) != len(versions) {
			t.Errorf("%d objects before, %d after", len(versions), len(after))
		}
		// the API server's counts are the whole cluster's: deletions are left to the objects'
		// versions above (the namespace controller, emptying the namespaces of the tests before,
		// deletes at any time: one failure in two make test runs), and so are the writes the API
		// server refused (requestKey.refused); every other write counts
		written := apiRequests(t).minus(requests)
		for k, n := range written {
			if k.write() && !k.dryRun && !k.refused && watchedResources[k.resource] && k.verb != "DELETE" && k.verb != "DELETECOLLECTION" {
				t.Errorf("the API server counted %v writes %s", n, k)
			}
		}
		dry := written[requestKey{verb: "POST", resource: "pods", dryRun: true}] + written[requestKey{verb: "POST", resource: "pods", dryRun: true, refused: true}]
		t.Logf("the API server counted %v dry-run creates of Pods", dry)
		if dry < 3*parents { // two plans of the label, one of the port
			t.Errorf("%v dry-run creates of Pods counted, want %d: did the plans send their dry runs?", dry, 3*parents)
		}
	})
}

// waitAllReady waits until n MyApps of ns are Ready: their Pods run, their status is written.
func waitAllReady(t *testing.T, ns string, n int) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%d MyApps Ready", n), func() error {
		ready, err := readyMyApps(t, ns)
		if err == nil && ready != n {
			err = fmt.Errorf("%d of %d Ready", ready, n)
		}
		return err
	})
}

// readyMyApps counts the MyApps of ns whose Ready condition is True.
func readyMyApps(t testing.TB, ns string) (int, error) {
	list, err := cluster.dynamic.Resource(myAppsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	ready := 0
	for i := range list.Items {
		if hasCondition("Ready", "True", "", "")(&list.Items[i]) == nil {
			ready++
		}
	}
	return ready, nil
}

func isLabelRecreate(c plan.Change, pod string) bool {
	return c.Action == decide.Recreate && c.Kind == "Pod" && c.Name == pod && c.Disruptive && c.DryRunError == "" &&
		len(c.Fields) == 1 && c.Fields[0].Path == "metadata.labels.version" && c.Fields[0].Old == nil && c.Fields[0].New == "v2"
}

// resourceVersions returns the resourceVersion of every MyApp and Pod of ns and every ConfigMap
// and Lease of the policy namespace, by resource/name.
func resourceVersions(t *testing.T, ns, policyNS string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range []struct {
		gvr schema.GroupVersionResource
		ns  string
	}{{myAppsGVR, ns}, {podsGVR, ns}, {configMapsGVR, policyNS}, {schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, policyNS}} {
		list, err := cluster.dynamic.Resource(r.gvr).Namespace(r.ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out[r.gvr.Resource+"/"+o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	return out
}

// watchedResources are the resources whose writes the plans could make.
var watchedResources = map[string]bool{"myapps": true, "pods": true, "configmaps": true}

// requestKey is a series of apiserver_request_total, summed over what the test does not tell
// apart.
type requestKey struct {
	verb, resource, subresource string
	dryRun                      bool
	// refused: the API server answered with no 2xx code, so nothing was written (the controller
	// manager's publisher of kube-root-ca.crt, say, recreating it in a namespace an earlier test's
	// cleanup is deleting, which the API server refuses with 403)
	refused bool
}

func (k requestKey) write() bool {
	switch k.verb {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

func (k requestKey) String() string {
	s := k.verb + " " + k.resource
	if k.subresource != "" {
		s += "/" + k.subresource
	}
	return s
}

type requestCounts map[requestKey]float64

func (c requestCounts) minus(o requestCounts) requestCounts {
	out := requestCounts{}
	for k, v := range c {
		if d := v - o[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// apiRequests scrapes apiserver_request_total from the API server's /metrics: dry runs are
// counted in their own series (label dry_run).
func apiRequests(t *testing.T) requestCounts {
	t.Helper()
	data, err := cluster.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("read the API server's metrics: %v", err)
	}
	out := requestCounts{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		labels, value, ok := requestTotal(sc.Text())
		if ok {
			out[requestKey{verb: labels["verb"], resource: labels["resource"], subresource: labels["subresource"], dryRun: labels["dry_run"] != "",
				refused: !strings.HasPrefix(labels["code"], "2")}] += value
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// requestTotal parses a sample of apiserver_request_total: name{k="v",...} value. The label
// values of this metric hold no quote or comma.
func requestTotal(line string) (map[string]string, float64, bool) {
	rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
	if !ok {
		return nil, 0, false
	}
	body, value, ok := strings.Cut(rest, "} ")
	if !ok {
		return nil, 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil {
		return nil, 0, false
	}
	labels := map[string]string{}
	for _, kv := range strings.Split(body, ",") {
		if k, val, ok := strings.Cut(kv, "="); ok {
			labels[k] = strings.Trim(val, `"`)
		}
	}
	return labels, v, true
}

func stderrOf(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}
