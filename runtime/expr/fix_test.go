package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
)

// TestAWrongResultTypeSaysWhatToWrite: an expression whose type cannot be what it must return
// (includeWhen's bool, forEach's list, a message's string) says the type it has and what to write.
func TestAWrongResultTypeSaysWhatToWrite(t *testing.T) {
	env := mustEnv(t, Scope{Parent: parentType(t, `
type: object
properties:
  spec:
    type: object
    properties:
      name: {type: string}
      size: {type: integer}
      enabled: {type: boolean}
      members: {type: array, items: {type: string}}
      labels: {type: object, additionalProperties: {type: string}}
`)})
	tests := []struct {
		name, expr string
		want       Want
		msg        string
	}{
		{"a string for a bool", "parent.spec.name", WantBool,
			`"parent.spec.name" must return a bool, but returns string: compare it with ==, e.g. "parent.spec.name == 'yes'"`},
		{"a number for a bool", "parent.spec.size + 1", WantBool,
			`"parent.spec.size + 1" must return a bool, but returns int: compare it, e.g. "(parent.spec.size + 1) > 0"`},
		{"a list for a bool", "parent.spec.members", WantBool,
			`must return a bool, but returns list(string): test its size, e.g. "size(parent.spec.members) > 0"`},
		{"an optional bool for a bool", "parent.spec.?enabled", WantBool,
			`must return a bool, but returns optional_type(bool): give it a default, e.g. "parent.spec.?enabled.orValue(false)"`},
		{"an optional string for a bool", "parent.spec.?name", WantBool,
			`test whether it has a value: "parent.spec.?name.hasValue()"`},
		{"an object for a bool", "parent.spec", WantBool, `test one of its fields, e.g. "has(parent.spec.enabled)"`},
		{"an object for a list", "parent.spec", WantList,
			`"parent.spec" must return a list, but returns metacel.parent.spec: did you mean "parent.spec.members"?`},
		{"an optional list for a list", "parent.spec.?members", WantList, `give the list it may hold, or none: "parent.spec.?members.orValue([])"`},
		{"a map for a list", "parent.spec.labels", WantList, `for its keys write "parent.spec.labels.map(k, k)"`},
		{"a string for a list", "parent.spec.name", WantList, `split it, e.g. "parent.spec.name.split(',')"`},
		{"a number for a list", "parent.spec.size", WantList, `for a list of one item write "[parent.spec.size]"`},
		{"a number for a string", "parent.spec.size", WantString, `convert it, e.g. "string(parent.spec.size)"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.Compile(tc.expr, tc.want)
			var wrong *ResultTypeError
			if !errors.As(err, &wrong) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v\nwant a ResultTypeError containing %s", err, tc.msg)
			}
		})
	}
}

// TestForEachHasNoIndex: index, which forEach does not declare, says what to name children by.
func TestForEachHasNoIndex(t *testing.T) {
	tests := []struct {
		name  string
		scope Scope
		want  string
	}{
		{"beside each", Scope{Each: cel.StringType}, "forEach gives each item as each, and no index: name the children by a field of each"},
		{"elsewhere, a plain undeclared name", Scope{}, "undeclared reference to 'index'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mustEnv(t, tc.scope).CompileTemplate("c-${index}", "metadata.name")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "interpolated") {
				t.Errorf("an undeclared name gets the hint of a value that cannot be interpolated: %v", err)
			}
		})
	}
}

// TestOnlyAValueOfTheWrongTypeGetsTheInterpolationHint: inside a string, a list needs the whole
// value to be its expression; a name that is not declared needs no such hint.
func TestOnlyAValueOfTheWrongTypeGetsTheInterpolationHint(t *testing.T) {
	tests := []struct {
		name, tmpl string
		hint       bool
	}{
		{"a list", "a-${[1, 2]}", true},
		{"an undeclared name", "a-${Running}", false},
		{"a syntax error", "a-${1 +}", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mustEnv(t, Scope{}).CompileTemplate(tc.tmpl, "metadata.name")
			if err == nil {
				t.Fatal("compiles")
			}
			if got := strings.Contains(err.Error(), `write the whole value as "${...}"`); got != tc.hint {
				t.Errorf("hint %v, want %v: %v", got, tc.hint, err)
			}
		})
	}
}
