package expr

import (
	"reflect"
	"testing"

	"github.com/google/cel-go/cel"
)

func TestAnExpressionSaysWhichChildrenAndVariablesItReads(t *testing.T) {
	env, err := NewEnv(Scope{Variables: []Var{{Name: "prefix", Type: cel.StringType}}, Children: map[string]ObjectID{"db": {}, "cache": {}, "pods": {List: true}}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		src  string
		want Refs
	}{
		{"a child's name: after it exists", "children.db.metadata.name", Refs{Children: map[string]bool{"db": false}}},
		{"a child's status: after it is ready", "children.db.status.ready", Refs{Children: map[string]bool{"db": true}}},
		{"optionals alike", "children.?db.?status.?ready.orValue(false)", Refs{Children: map[string]bool{"db": true}}},
		{"whether it exists", "has(children.db) && children.?cache.hasValue()", Refs{Children: map[string]bool{"db": false, "cache": false}}},
		{"a list of children iterated: as a whole", "children.pods.all(p, p.status.phase == 'Running')", Refs{Children: map[string]bool{"pods": true}}},
		{"children whole", "[children].size() > 0", Refs{AllChildren: true}},
		{"a variable", "variables.prefix + '-x'", Refs{Variables: map[string]bool{"prefix": true}}},
		{"nothing of either", "parent.metadata.name", Refs{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := env.Compile(tc.src, WantAny)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Refs(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Refs() = %+v, want %+v", got, tc.want)
			}
		})
	}
}
