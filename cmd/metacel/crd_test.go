package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// runCRD runs `metacel crd` in-process, under a root command set up as main's.
func runCRD(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := &cobra.Command{Use: "metacel", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newCRDCommand())
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"crd"}, args...))
	err := root.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

func crdInput(name string) string { return filepath.Join("testdata", "crd", name) }

// TestCRDPrintsTheDeclaredParentCRD compares `metacel crd` with its golden file (regenerate with
// METACEL_UPDATE_GOLDEN=1), and checks that what it prints is a CRD the API server accepts and the
// policy loads against.
func TestCRDPrintsTheDeclaredParentCRD(t *testing.T) {
	out, errOut, err := runCRD(t, crdInput("website.yaml"))
	if err != nil {
		t.Fatalf("crd: %v\n%s", err, errOut)
	}
	golden(t, crdInput("website-crd.yaml"), out)

	file := filepath.Join(t.TempDir(), "website-crd.yaml")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	crds, err := kinds.ReadCRDs(file)
	if err != nil || len(crds) != 1 {
		t.Fatalf("read the printed CRD: %v (%d CRDs)", err, len(crds))
	}
	checkStructural(t, crds[0])
	cat := kinds.NewCatalog()
	cat.AddCRD(crds[0])
	data, _ := os.ReadFile(crdInput("website.yaml"))
	if _, err := policy.Load(crdInput("website.yaml"), data, cat); err != nil {
		t.Errorf("the policy does not load against the CRD it declares:\n%v", err)
	}
}

// checkStructural checks a CRD's schema with the API server's structural schema checks.
func checkStructural(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatalf("not structural: %v", err)
	}
	if errs := structuralschema.ValidateStructural(field.NewPath("openAPIV3Schema"), s); len(errs) > 0 {
		t.Errorf("not structural: %v", errs.ToAggregate())
	}
}

func TestCRDReportsErrorsAndPrintsNothing(t *testing.T) {
	tests := []struct {
		name, policy string
		want         string
	}{
		{"an unknown schema key names its line", strings.Replace(websitePolicy(t), "maximum: 10", "maximun: 10", 1),
			`:23: spec.parentSchema.spec.replicas.maximun: unknown key "maximun" (did you mean "maximum"?)`},
		{"a policy without a parent schema", strings.Replace(websitePolicy(t), "  parentSchema:", "  parentSchemaX:", 1),
			`unknown field "parentSchemaX" (did you mean "parentSchema"?)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "website.yaml")
			if err := os.WriteFile(file, []byte(tc.policy), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, err := runCRD(t, file)
			if err == nil || !strings.Contains(errOut, file+tc.want) && !strings.Contains(errOut, tc.want) {
				t.Errorf("got %v and\n%s\nwant an error containing %q", err, errOut, tc.want)
			}
			if out != "" {
				t.Errorf("a failed crd must print nothing, got:\n%s", out)
			}
		})
	}
}

func TestCRDOfPoliciesWithoutAParentSchemaIsAnError(t *testing.T) {
	out, errOut, err := runCRD(t, filepath.Join(repo, "policies", "myapp.yaml"))
	if err == nil || !strings.Contains(errOut, "declares spec.parentSchema") || out != "" {
		t.Errorf("got %v, output %q and\n%s\nwant an error saying no policy declares spec.parentSchema", err, out, errOut)
	}
}

func websitePolicy(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(crdInput("website.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestSeedCRDsAreWhatTheirPoliciesDeclare: a seed policy that declares its parent's schema
// installs it, and its file in crds/ (for applying by hand, and for offline checks) is what
// `metacel crd` prints for it, comments aside; applied by hand, the runtime finds it up to date.
func TestSeedCRDsAreWhatTheirPoliciesDeclare(t *testing.T) {
	policies, err := filepath.Glob(filepath.Join(repo, "policies", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	declaring := 0
	for _, p := range policies {
		data, _ := os.ReadFile(p)
		if !strings.Contains(string(data), "parentSchema:") {
			continue
		}
		declaring++
		t.Run(filepath.Base(p), func(t *testing.T) {
			out, errOut, err := runCRD(t, p)
			if err != nil {
				t.Fatalf("crd: %v\n%s", err, errOut)
			}
			file, err := os.ReadFile(filepath.Join(repo, "crds", filepath.Base(p)))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := withoutComments(string(file)), withoutComments(out); got != want {
				t.Errorf("crds/%s is not what metacel crd prints for its policy: regenerate it with bin/metacel crd %s", filepath.Base(p), p)
			}
		})
	}
	if declaring == 0 {
		t.Fatal("no seed policy declares parentSchema: the demo's one-apply operator is gone")
	}
}

// withoutComments drops the lines that are YAML comments.
func withoutComments(text string) string {
	var out []string
	for l := range strings.SplitSeq(text, "\n") {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// crd --help says the bounds the CRD it prints gives a string, a list and a map declared without
// one: it said 4096, 1000 and 1000 while the CRD said 1024, 100 and 100.
func TestCRDHelpSaysTheBoundsItGives(t *testing.T) {
	out, errOut, err := runCRD(t, crdInput("website.yaml"))
	if err != nil {
		t.Fatalf("crd: %v\n%s", err, errOut)
	}
	help := strings.Join(strings.Fields(newCRDCommand().Long), " ")
	for _, bound := range []string{"maxLength: 1024"} {
		if !strings.Contains(out, bound) {
			t.Errorf("the printed CRD has no %q", bound)
		}
	}
	if want := "maxProperties get 1024, 100 and 100"; !strings.Contains(help, want) {
		t.Errorf("crd --help does not say %q:\n%s", want, help)
	}
}
