package render

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// schemaPolicy is a policy with an untyped parent (no CRD), so that what its expressions give is
// known only when they run: policyHead, with Deployment children too.
var schemaPolicy = policyHead + "    - {apiVersion: apps/v1, resource: deployments}\n  children:\n"

func loadSchemaPolicy(t testing.TB, children string) *policy.Compiled {
	t.Helper()
	cs, err := policy.Load("p.yaml", []byte(schemaPolicy+children), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

func TestRenderedChildrenFitTheirSchema(t *testing.T) {
	tests := []struct {
		name     string
		children string
		want     string // "" when the child renders
	}{
		{"a template's expression of the right type", `    - id: d
      template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: "${parent.spec.count}", selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: c}]}}}}
`, ""},
		{"a template's expression of the wrong type", `    - id: d
      template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: "${parent.spec.other}", selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: c}]}}}}
`, `spec.children[0]: Deployment "d" does not fit the schema of its kind, so the API server would reject it: spec.replicas: "elsewhere" is a string, but Deployment spec.replicas takes a number`},
		{"an expression child with a misspelt field", `    - id: cm
      expression: "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x'}, 'datta': {'a': 'b'}}"
`, `spec.children[0]: ConfigMap "x" does not fit the schema of its kind, so the API server would reject it: datta: unknown field "datta" of ConfigMap (did you mean "data"?)`},
		{"an expression child with a number for a string", `    - id: cm
      expression: "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x'}, 'data': {'count': parent.spec.count}}"
`, `data.count: 2 is a number, but ConfigMap data.count takes a string`},
		{"a forEach that gives two containers one name", `    - id: d
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d}
        spec: {selector: {matchLabels: {a: b}}, template: {spec: {containers: "${parent.spec.names.map(n, {'name': 'same', 'image': n})}"}}}
`, `spec.template.spec.containers[1]: has the same name as item 0`},
		{"an expression child without a required field", `    - id: d
      expression: "{'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'd'}, 'spec': {'template': {'spec': {'containers': [{'name': 'c'}]}}}}"
`, `spec.children[0]: Deployment "d" does not fit the schema of its kind, so the API server would reject it: spec: required field "selector" of Deployment spec is missing`},
		{"containers built without a name", `    - id: d
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d}
        spec: {selector: {matchLabels: {a: b}}, template: {spec: {containers: "${parent.spec.names.map(n, {'image': n})}"}}}
`, `spec.template.spec.containers[0]: required field "name" of Deployment spec.template.spec.containers[0] is missing; spec.template.spec.containers[1]: required field "name" of Deployment spec.template.spec.containers[1] is missing`},
		{"several problems are named in field order, at most three", `    - id: cm
      expression: "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x', 'labels': {'n': 1}}, 'zz': 1, 'datta': 1, 'immutable': 'yes'}"
`, `datta: unknown field "datta" of ConfigMap (did you mean "data"?); immutable: "yes" is a string, but ConfigMap immutable takes a boolean; metadata.labels.n: 1 is a number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(t.Context(), loadSchemaPolicy(t, tc.children), Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()})
			var re *Error
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("render: %v", err)
			case tc.want != "" && (!errors.As(err, &re) || re.Reason != contract.ReasonInvalidChild || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("render: %v, want %s containing %q", err, contract.ReasonInvalidChild, tc.want)
			}
		})
	}
}

// TestSchemaErrorsAreStable: the same child gives the same message on every render, so that the
// parent's condition does not change (and its status is not written) on every sync.
func TestSchemaErrorsAreStable(t *testing.T) {
	c := loadSchemaPolicy(t, `    - id: cm
      expression: "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x'}, 'a': 1, 'b': 1, 'c': 1, 'd': 1, 'e': 1}"
`)
	in := Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()}
	_, first := Render(t.Context(), c, in)
	for range 20 {
		if _, err := Render(t.Context(), c, in); err == nil || first == nil || err.Error() != first.Error() {
			t.Fatalf("render: %v, then %v: want the same error every time", first, err)
		}
	}
}

// TestChildHeldAsRenderedIsNotCheckedAgain: a child the cluster holds exactly as rendered (its
// desired hash) was accepted by the API server, so a converged parent's sync skips the check.
func TestChildHeldAsRenderedIsNotCheckedAgain(t *testing.T) {
	c := loadSchemaPolicy(t, `    - id: d
      template: {apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: "${parent.spec.other}", selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: c}]}}}}
`)
	in := Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()}
	if _, err := Render(t.Context(), c, in); err == nil {
		t.Fatal("the child does not fit its schema: want an error")
	}
	unchecked := withoutSchemas(c)
	out, err := Render(t.Context(), unchecked, in)
	if err != nil {
		t.Fatal(err)
	}
	in.Observed = map[string][]*unstructured.Unstructured{"d": {out.Children[0].Object}}
	if _, err := Render(t.Context(), c, in); err != nil {
		t.Errorf("the observed child carries the rendered hash: want no check, got %v", err)
	}
	changed := out.Children[0].Object.DeepCopy()
	changed.SetAnnotations(map[string]string{contract.AnnotationDesiredHash: "other"})
	in.Observed = map[string][]*unstructured.Unstructured{"d": {changed}}
	if _, err := Render(t.Context(), c, in); err == nil {
		t.Error("the observed child carries another hash: want the check, and its error")
	}
}

// withoutSchemas returns a copy of a compiled policy that knows no schema of its children.
func withoutSchemas(c *policy.Compiled) *policy.Compiled {
	out := *c
	out.ChildResources = maps.Clone(c.ChildResources)
	for gvr, res := range out.ChildResources {
		res.ObjectSchema = nil
		out.ChildResources[gvr] = res
	}
	return &out
}

// BenchmarkRenderConverged renders the seed policies' samples with their children observed as
// rendered, as the controller does on every sync of a converged parent.
func BenchmarkRenderConverged(b *testing.B) {
	for _, name := range []string{"myapp", "memcached"} {
		b.Run(name, func(b *testing.B) {
			c, in := seedPolicy(b, name)
			out, err := Render(b.Context(), c, in)
			if err != nil {
				b.Fatal(err)
			}
			in.Observed = map[string][]*unstructured.Unstructured{}
			for _, ch := range out.Children {
				in.Observed[ch.ID] = append(in.Observed[ch.ID], ch.Object)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Render(b.Context(), c, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
