package apply

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestOwnedStatusIsMetacelsShareOfTheStatus(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want string
	}{
		{"another writer's field is left out", `
status: {a: 1, b: 2, observedGeneration: 3, conditions: [{type: Ready, status: "True"}]}
metadata:
  managedFields:
    - {manager: metacel, operation: Apply, subresource: status, fieldsType: FieldsV1, fieldsV1: {"f:status": {"f:a": {}, "f:observedGeneration": {}, "f:conditions": {}}}}
    - {manager: other, operation: Update, subresource: status, fieldsType: FieldsV1, fieldsV1: {"f:status": {"f:b": {}}}}`,
			`{"a":1,"conditions":[{"status":"True","type":"Ready"}],"observedGeneration":3}`},
		{"conditions owned item by item (a map list) are kept", `
status: {observedGeneration: 3, conditions: [{type: Ready, status: "True"}, {type: Other, status: "False"}]}
metadata:
  managedFields:
    - {manager: metacel, operation: Apply, subresource: status, fieldsType: FieldsV1, fieldsV1: {"f:status": {"f:observedGeneration": {}, "f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:type": {}, "f:status": {}}}}}}`,
			`{"conditions":[{"status":"True","type":"Ready"}],"observedGeneration":3}`},
		{"nothing applied by metacel", `
status: {b: 2}`, `null`},
		{"a nested object metacel set field by field", `
status: {alb: {dns: x, other: y}}
metadata:
  managedFields:
    - {manager: metacel, operation: Apply, subresource: status, fieldsType: FieldsV1, fieldsV1: {"f:status": {"f:alb": {"f:dns": {}}}}}`,
			`{"alb":{"dns":"x"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.obj), &obj.Object); err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(OwnedStatus(obj))
			if string(got) != tc.want {
				t.Errorf("owned status %s, want %s", got, tc.want)
			}
		})
	}
}
