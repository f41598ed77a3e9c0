package expr

import (
	"strings"
	"testing"
)

// TestAMisspeltNameSuggestsTheKnownOne: an undefined field of a typed parent, an unknown child,
// related or variable id, or an undeclared variable says which known name was likely meant.
func TestAMisspeltNameSuggestsTheKnownOne(t *testing.T) {
	env := mustEnv(t, Scope{
		Parent: parentType(t, `
type: object
properties:
  spec:
    type: object
    properties:
      image: {type: string}
      namespace: {type: string}
      containers: {type: array, items: {type: object, properties: {name: {type: string}}}}
`),
		Children:  map[string]ObjectID{"pod": {}, "services": {List: true}},
		Related:   map[string]ObjectID{"source": {}},
		Variables: []Var{{Name: "podName"}},
	})
	tests := []struct {
		expr, want string
	}{
		{"parent.spec.imgae", `undefined field 'imgae' (did you mean "image"?) (column 12 of the expression)`},
		{"parent.spec.?imgae.orValue('')", `undefined field 'imgae' (did you mean "image"?)`},
		{"parent.?spec.?imgae.orValue('')", `undefined field 'imgae' (did you mean "image"?)`},
		{"has(parent.spec.imgae)", `undefined field 'imgae' (did you mean "image"?)`},
		{"parent.spec.containers[0].naem", `undefined field 'naem' (did you mean "name"?)`},
		{"parent.spec.containers.map(c, c.naem)", `undefined field 'naem' (did you mean "name"?)`},
		{"parent.spec.namespce", `undefined field 'namespce' (did you mean "namespace"?)`},
		{"parent.metadata.naem", `undefined field 'naem' (did you mean "name"?)`},
		{"children.pdo", `undefined field 'pdo' (did you mean "pod"?)`},
		{"children.?service.orValue([])", `undefined field 'service' (did you mean "services"?)`},
		{"related.sourc", `undefined field 'sourc' (did you mean "source"?)`},
		{"variables.podname", `undefined field 'podname' (did you mean "podName"?)`},
		{"parnet.spec", `undeclared reference to 'parnet' (in container '') (did you mean "parent"?)`},
		{"parent.spec.imgae + variables.podNme", `undefined field 'imgae' (did you mean "image"?) (column 12 of the expression); undefined field 'podNme' (did you mean "podName"?)`},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := env.Compile(tc.expr, WantAny)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
	t.Run("nothing close: no suggestion", func(t *testing.T) {
		_, err := env.Compile("parent.spec.replicas", WantAny)
		if err == nil || strings.Contains(err.Error(), "did you mean") {
			t.Fatalf("got %v", err)
		}
	})
}
