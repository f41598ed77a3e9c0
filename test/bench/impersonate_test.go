//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/policy"
)

// Each configuration is followed by its twin, whose metacel acts as its ServiceAccount and whose
// baseline is its configuration's run; the configuration itself is unchanged.
func TestEachConfigurationIsFollowedByItsImpersonatedTwin(t *testing.T) {
	selected := withImpersonatedTwins(selectConfigs(configurations(""), []string{"unthrottled", "defaults"}))
	var names []string
	for _, c := range selected {
		names = append(names, c.name)
	}
	if want := []string{"unthrottled", "unthrottled-impersonated", "defaults", "defaults-impersonated"}; !slices.Equal(names, want) {
		t.Fatalf("configurations %v, want %v", names, want)
	}
	for i := 0; i < len(selected); i += 2 {
		c, twin := selected[i], selected[i+1]
		if c.impersonate || c.twinOf != "" {
			t.Errorf("%s: the configuration itself changed: %+v", c.name, c)
		}
		if !twin.impersonate || twin.twinOf != c.name || twin.handFrom != c.name {
			t.Errorf("%s: impersonate %v, twin of %q, baseline from %q", twin.name, twin.impersonate, twin.twinOf, twin.handFrom)
		}
		if !slices.Equal(twin.metacel, c.metacel) || !slices.Equal(twin.handArg, c.handArg) || twin.baselineOf() != c.baselineOf() {
			t.Errorf("%s: flags or baseline differ from %s's", twin.name, c.name)
		}
	}
}

// The impersonated policy is the bench's policy with spec.serviceAccountName, nothing else.
func TestThePolicyActingAsItsServiceAccountHasTheSameSpecOtherwise(t *testing.T) {
	for _, file := range []string{"myapp.yaml", "memcached.yaml"} {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			acting, err := withServiceAccount(raw, "bench-sa")
			if err != nil {
				t.Fatal(err)
			}
			var before, after policy.CompositePolicy
			if err := yaml.UnmarshalStrict(raw, &before); err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict(acting, &after); err != nil {
				t.Fatalf("the policy acting as its ServiceAccount: %v", err)
			}
			if after.Spec.ServiceAccountName != "bench-sa" {
				t.Errorf("serviceAccountName %q", after.Spec.ServiceAccountName)
			}
			after.Spec.ServiceAccountName = ""
			if !reflect.DeepEqual(before, after) {
				t.Error("more than the serviceAccountName changed")
			}
		})
	}
}

func TestWithServiceAccountRefusesWhatItCannotRewrite(t *testing.T) {
	for _, tc := range []struct{ name, policy string }{
		{"a ServiceAccount named already", "metadata:\n  name: p\nspec:\n  serviceAccountName: other\n"},
		{"no spec", "metadata:\n  name: p\n"},
		{"two specs", "spec:\n  a: 1\nspec:\n  b: 2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if out, err := withServiceAccount([]byte(tc.policy), "sa"); err == nil {
				t.Errorf("no error; got %q", out)
			}
		})
	}
}

// testdata/rbac-myapp.yaml is what `metacel rbac --namespace metacel-system` printed for
// testdata/myapp.yaml with serviceAccountName: myapp. The bench waits until the API server grants
// every rule of the role bound to the ServiceAccount, and not those of the runtime's reads.
func TestGrantedToReadsTheServiceAccountAndItsBoundRules(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "rbac-myapp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := parseManifests(raw)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind())
	}
	if want := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ClusterRole"}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	sa, checks, err := grantedTo(objs)
	if err != nil {
		t.Fatal(err)
	}
	if sa.String() != "metacel-system/myapp" || sa.user() != "system:serviceaccount:metacel-system:myapp" {
		t.Errorf("ServiceAccount %s (%s)", sa, sa.user())
	}
	if len(checks) != 11 {
		t.Errorf("%d checks, want 11 (pods: 6 verbs, myapps: 4, myapps/status: 1): %v", len(checks), checks)
	}
	for _, want := range []access{{"create", "", "pods"}, {"delete", "", "pods"}, {"patch", "demo.rtfm.co.ua", "myapps/status"}} {
		if !slices.Contains(checks, want) {
			t.Errorf("no check of %v in %v", want, checks)
		}
	}
}

func TestGrantedToRefusesManifestsThatGrantNothingKnown(t *testing.T) {
	sa := "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  namespace: ns\n"
	binding := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: b\nroleRef:\n  kind: ClusterRole\n  name: missing\nsubjects:\n- kind: ServiceAccount\n  name: a\n  namespace: ns\n"
	for _, tc := range []struct{ name, stream string }{
		{"no ServiceAccount", binding},
		{"two ServiceAccounts", sa + "---\n" + strings.Replace(sa, "name: a", "name: c", 1)},
		{"no binding", sa},
		{"a binding to a role not among them", sa + "---\n" + binding},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := parseManifests([]byte(tc.stream))
			if err != nil {
				t.Fatal(err)
			}
			if _, checks, err := grantedTo(objs); err == nil {
				t.Errorf("no error; checks %v", checks)
			}
		})
	}
}

func TestAccessReviewsAreRequestsButNotWrites(t *testing.T) {
	for _, tc := range []struct {
		k               reqKey
		review, request bool
		write           bool
	}{
		{reqKey{Verb: "POST", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, true, true, false},
		{reqKey{Verb: "POST", Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}, true, true, false},
		{reqKey{Verb: "POST", Group: "authentication.k8s.io", Resource: "tokenreviews"}, true, true, false},
		{reqKey{Verb: "POST", Resource: "pods"}, false, true, true},
		{reqKey{Verb: "GET", Group: "authorization.k8s.io", Subresource: "/apis/authorization.k8s.io"}, false, false, false},
	} {
		t.Run(tc.k.String(), func(t *testing.T) {
			if got := accessReviews(tc.k); got != tc.review {
				t.Errorf("access review: %v", got)
			}
			if got := work(tc.k); got != tc.request {
				t.Errorf("counted among the requests: %v", got)
			}
			if got := writes(tc.k); got != tc.write {
				t.Errorf("a write: %v", got)
			}
		})
	}
}

// The twin's row gives its ratio to its configuration's, its access reviews by window, and with
// two runs each, the paired ratios.
func TestTheImpersonationTableSetsTheTwinBesideItsConfiguration(t *testing.T) {
	sar := reqKey{Verb: "POST", Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}
	self := reqKey{Verb: "POST", Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}
	pods := reqKey{Verb: "POST", Resource: "pods"}
	run := func(converge time.Duration, serverCPU float64, c counts, actsAs string) *result {
		return &result{created: converge / 2, converge: converge, settled: converge + time.Second, serverCPU: serverCPU, cpu: 1, rss: 50,
			restart: time.Second, converged: c, startup: counts{self: 1}, actsAs: actsAs}
	}
	configs := withImpersonatedTwins(selectConfigs(configurations(""), []string{"unthrottled"}))
	results := map[string][]*result{
		metacel + "/unthrottled": {run(2*time.Second, 4, counts{pods: 100}, ""), run(2*time.Second, 4, counts{pods: 100}, "")},
		metacel + "/unthrottled-impersonated": {
			run(3*time.Second, 5, counts{pods: 100, sar: 2}, "metacel-system/myapp"),
			run(4*time.Second, 6, counts{pods: 100, sar: 2}, "metacel-system/myapp"),
		},
	}
	table := impersonationTable(configs, results)
	for _, want := range []string{
		"| unthrottled | the runtime (--allow-policies-without-service-account) | 2.0 | 3.0 | 100 |",
		"| unthrottled-impersonated | its ServiceAccount metacel-system/myapp | 3.5 (×1.75) | 4.5 (×1.50) | 102 (×1.02) | start-up: POST selfsubjectreviews 1; converge: POST subjectaccessreviews 2; idle: –; restarts: – |",
		"| 5.5 (×1.38) |",
		"| unthrottled-impersonated | ×2.00 (1.50, 2.00) | ×1.02 (1.02, 1.02) | ×1.50 (1.25, 1.50) | ×1.00 (1.00, 1.00) | ×1.00 (1.00, 1.00) | ×2.00 (1.50, 2.00) |",
		"| 1.00 (×1.00) | 0 | 1.8 (×1.75) |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("no %q in\n%s", want, table)
		}
	}
	delete(results, metacel+"/unthrottled")
	if table := impersonationTable(configs, results); table != "" {
		t.Errorf("a table without the configuration's run:\n%s", table)
	}
}
