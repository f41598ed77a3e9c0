package expr

import (
	"reflect"
	"testing"

	"github.com/google/cel-go/cel"
)

func TestAnExpressionSaysWhichChildrenVariablesAndParentFieldsItReads(t *testing.T) {
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
		{"a parent's field", "parent.metadata.name", Refs{Parent: map[string]bool{"metadata.name": true}}},
		{"a parent's field optionally, and by a literal key", "parent.?spec.size.orValue('') + parent.spec['image']", Refs{Parent: map[string]bool{"spec.size": true, "spec.image": true}}},
		{"the parent whole", "[parent].size()", Refs{WholeParent: true}},
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

func TestAParentFieldIsReadWhenItOrAFieldAboveItIs(t *testing.T) {
	refs := Refs{Parent: map[string]bool{"spec.template": true, "spec.size": true}}
	for path, want := range map[string]bool{"spec.template.image": true, "spec.size": true, "spec": false, "spec.sizes": false, "status.x": false} {
		if got := refs.ReadsParentField(path); got != want {
			t.Errorf("ReadsParentField(%q) = %v, want %v", path, got, want)
		}
	}
	if !(Refs{WholeParent: true}).ReadsParentField("spec.anything") {
		t.Error("a parent read whole reads every field")
	}
}
