package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/plan"
	"metacel.dev/metacel/runtime/policy"
)

// aPlan is a plan with one recreated Pod and one failing parent.
func aPlan() *plan.Plan {
	return &plan.Plan{
		Policy: "myapp", Running: "configmap/metacel-system/policy-myapp/myapp.yaml",
		Parents: []plan.Parent{
			{APIVersion: "demo.rtfm.co.ua/v1", Kind: "MyApp", Namespace: "default", Name: "a",
				Children: []plan.Change{{Action: decide.Recreate, APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: "a-pod", Disruptive: true,
					Why: "its resource's updateStrategy is Recreate: deleted, then created anew", Fields: []plan.FieldChange{{Path: "metadata.labels.version", New: "v2"}}}}},
			{APIVersion: "demo.rtfm.co.ua/v1", Kind: "MyApp", Namespace: "default", Name: "b",
				Children: []plan.Change{{Action: decide.Create, APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: "b-pod", Why: "a new child",
					DryRunError: `Pod "b-pod" is invalid`}},
				Error: `dry run of create v1 Pod default/b-pod: Pod "b-pod" is invalid`},
		},
		Totals: plan.Totals{Parents: 3, Changed: 2, Created: 1, Recreated: 1, Failing: 1},
	}
}

func TestPlanOutput(t *testing.T) {
	tests := []struct {
		name, output string
		check        func(t *testing.T, out string)
	}{
		{"text names each change, its fields, the failures and the totals", "text", func(t *testing.T, out string) {
			want := `policy "myapp" of new.yaml, against the running version in configmap/metacel-system/policy-myapp/myapp.yaml

MyApp default/a:
  recreate v1 Pod default/a-pod (disruptive): its resource's updateStrategy is Recreate: deleted, then created anew
      metadata.labels.version: (absent) → "v2"

MyApp default/b:
  create v1 Pod default/b-pod: a new child
      dry run refused: Pod "b-pod" is invalid
  FAILING: dry run of create v1 Pod default/b-pod: Pod "b-pod" is invalid

3 parents, 2 changed: 1 created, 0 updated, 1 recreated, 0 deleted, 0 released, 1 failing
`
			if out != want {
				t.Errorf("got:\n%s\nwant:\n%s", out, want)
			}
		}},
		{"json is one document with the parents and the totals", "json", func(t *testing.T, out string) {
			var got plan.Plan
			dec := json.NewDecoder(strings.NewReader(out))
			if err := dec.Decode(&got); err != nil {
				t.Fatal(err)
			}
			if dec.More() {
				t.Error("more than one JSON document")
			}
			if got.Totals != aPlan().Totals || len(got.Parents) != 2 || got.Parents[1].Error == "" || got.Parents[0].Children[0].Action != decide.Recreate {
				t.Errorf("decoded %+v", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := (&planOptions{output: tt.output}).print(&out, "new.yaml", aPlan()); err != nil {
				t.Fatal(err)
			}
			tt.check(t, out.String())
		})
	}
}

func TestPlanRefusesWhatItCannotDo(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	policyFile := filepath.Join(repo, "policies", "myapp.yaml")
	if _, err := os.Stat(policyFile); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"an unknown output format", []string{"plan", policyFile, "-o", "yaml"}, `--output "yaml": want text or json`},
		{"a kubeconfig that does not exist", []string{"plan", policyFile, "--kubeconfig", missing}, `kubeconfig "` + missing + `"`},
		{"no policy file", []string{"plan"}, "accepts 1 arg(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runCLI(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestPlanActsAsThePolicysServiceAccountUnlessToldOtherwise: plan impersonates the policy's
// ServiceAccount, as the runtime acts; --as, which the API server cannot impersonate on top of it,
// is whom it acts as instead, with a warning, never replaced in silence.
func TestPlanActsAsThePolicysServiceAccountUnlessToldOtherwise(t *testing.T) {
	withAccount := "apiVersion: metacel.dev/v1alpha1\nkind: CompositePolicy\nmetadata: {name: p}\nspec:\n  serviceAccountName: deployer\n" +
		"  parentResource: {apiVersion: v1, resource: configmaps}\n  childResources: [{apiVersion: v1, resource: secrets}]\n" +
		"  children:\n    - id: s\n      template: {apiVersion: v1, kind: Secret, metadata: {name: \"${parent.metadata.name}\"}}\n"
	tests := []struct {
		name        string
		policy      string
		as          rest.ImpersonationConfig
		want, warns string
	}{
		{"the policy's ServiceAccount", withAccount, rest.ImpersonationConfig{}, "system:serviceaccount:ops:deployer", ""},
		{"--as instead, said", withAccount, rest.ImpersonationConfig{UserName: "jane"}, "jane", `warning: planned as "jane" (--as), not as the policy's ServiceAccount ops/deployer`},
		{"no ServiceAccount: the caller, said", strings.Replace(withAccount, "  serviceAccountName: deployer\n", "", 1), rest.ImpersonationConfig{}, "",
			`warning: policy "p" names no spec.serviceAccountName: planned with your own credentials`},
		{"no ServiceAccount and --as: --as, said", strings.Replace(withAccount, "  serviceAccountName: deployer\n", "", 1), rest.ImpersonationConfig{UserName: "jane"}, "jane",
			`warning: policy "p" names no spec.serviceAccountName: planned as "jane" (--as)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := policy.Load("p.yaml", []byte(tc.policy), kinds.NewCatalog())
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			o := &planOptions{namespace: "ops"}
			got := o.actingConfig(&rest.Config{Host: "https://cluster", Impersonate: tc.as}, cs[0], &stderr)
			if got.Impersonate.UserName != tc.want {
				t.Errorf("acts as %q, want %q", got.Impersonate.UserName, tc.want)
			}
			if !strings.Contains(stderr.String(), tc.warns) || (tc.warns == "") != (stderr.Len() == 0) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.warns)
			}
		})
	}
}
