package preview

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestTypeErrorsShowTheValueNotItsTypeName(t *testing.T) {
	obj := map[string]any{
		"spec": map[string]any{
			"replicas": "two",
			"items":    []any{map[string]any{"size": true}},
			"labels":   map[string]any{"app.kubernetes.io/name": int64(3)},
			"limits":   map[string]any{"cpu": "1", "memory": "64Mi"},
		},
	}
	tests := []struct {
		name  string
		field string
		want  string
	}{
		{"a string where a number goes", "spec.replicas", `spec.replicas: Invalid value: "two": must be of type integer`},
		{"an item of a list", "spec.items[0].size", `spec.items[0].size: Invalid value: true: must be of type integer`},
		{"a map value whose key has dots", "spec.labels[app.kubernetes.io/name]", `spec.labels[app.kubernetes.io/name]: Invalid value: 3: must be of type integer`},
		{"an object as JSON", "spec.limits", `spec.limits: Invalid value: {"cpu":"1","memory":"64Mi"}: must be of type integer`},
		{"a path the object does not hold keeps what the validator said", "spec.missing[2]", `spec.missing[2]: Invalid value: "string": must be of type integer`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := field.ErrorList{{Type: field.ErrorTypeTypeInvalid, Field: tc.field, BadValue: "string", Detail: "must be of type integer"}}
			if got := withValues(obj, errs)[0].Error(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
