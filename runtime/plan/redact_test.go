package plan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRedactKeepsSecretDataOutOfThePlan(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db", "namespace": "team-a"},
		"data": map[string]any{"password": "aHVudGVyMi1zM2NyZXQ="}, // hunter2-s3cret
	}}
	configMap := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"note": "not-a-secret-value"},
	}}
	tests := []struct {
		name   string
		parent Parent
		keeps  string // a text that must stay
	}{
		{"a validation message quoting the decoded value", Parent{Error: "password hunter2-s3cret is too weak"}, "is too weak"},
		{"a dry run's error quoting the stored value", Parent{Children: []Change{{APIVersion: "v1", Kind: "ConfigMap", DryRunError: "invalid value aHVudGVyMi1zM2NyZXQ=: bad"}}}, "invalid value"},
		{"a ConfigMap child's field holding the value", Parent{Children: []Change{{APIVersion: "v1", Kind: "ConfigMap",
			Fields: []FieldChange{{Path: "data.copy", New: "prefix-hunter2-s3cret"}}}}}, "prefix-"},
		{"a value nested in a status field", Parent{Status: []FieldChange{{Path: "status.db", New: map[string]any{"dsn": []any{"user:hunter2-s3cret@db"}}}}}, "user:"},
		{"a Secret child's data, whatever its value", Parent{Children: []Change{{APIVersion: "v1", Kind: "Secret",
			Fields: []FieldChange{{Path: "data.token", Old: "b2xk", New: "bmV3"}, {Path: "stringData", New: map[string]any{"x": "generated-here"}}}}}}, "data.token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s secrets
			s.note(secret, configMap)
			parents := []Parent{tt.parent}
			redact(parents, &s)
			out := marshal(t, parents)
			for _, leak := range []string{"hunter2-s3cret", "aHVudGVyMi1zM2NyZXQ=", "b2xk", "bmV3", "generated-here"} {
				if strings.Contains(string(out), leak) {
					t.Errorf("the plan holds Secret data %q: %s", leak, out)
				}
			}
			if !strings.Contains(string(out), tt.keeps) || !strings.Contains(string(out), redacted) {
				t.Errorf("the plan lost more than the Secret data (want %q and %q): %s", tt.keeps, redacted, out)
			}
		})
	}
	t.Run("values of other kinds and short values stay", func(t *testing.T) {
		var s secrets
		s.note(configMap, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "data": map[string]any{"on": "MQ=="}}})
		parents := []Parent{{Error: "note not-a-secret-value; flag 1"}}
		redact(parents, &s)
		if parents[0].Error != "note not-a-secret-value; flag 1" {
			t.Errorf("redacted what is no Secret data: %q", parents[0].Error)
		}
	})
}

// marshal writes v as JSON, < and > as they are.
func marshal(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
