package policy

import (
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/test/testpolicies"
)

func TestATemplateCannotSetWhatTheRuntimeOwns(t *testing.T) {
	child := func(metadata string) string {
		return `    - id: cm
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: x
` + metadata
	}
	tests := []struct {
		name, metadata string
		want           string // "" for a policy that loads
	}{
		{"an ownerReference", `          ownerReferences:
            - {apiVersion: v1, kind: ConfigMap, name: other, uid: "${parent.metadata.uid}"}
`, `p.yaml:25: spec.children[1].template.metadata.ownerReferences: is set by the runtime, not by a template: metacel sets the parent's ownerReference itself`},
		{"a resourceVersion", `          resourceVersion: "1"
`, `p.yaml:25: spec.children[1].template.metadata.resourceVersion: is set by the runtime`},
		{"a generation", `          generation: 7
`, `p.yaml:25: spec.children[1].template.metadata.generation: is set by the runtime, not by a template: the API server counts it`},
		{"a creationTimestamp", `          creationTimestamp: "2026-11-30T00:00:00Z"
`, `p.yaml:25: spec.children[1].template.metadata.creationTimestamp: is set by the API server when the object is created`},
		{"a null creationTimestamp, as kubectl prints it", `          creationTimestamp: null
`, ""},
		{"metacel's label", `          labels:
            metacel.dev/parent-uid: "x"
`, `p.yaml:26: spec.children[1].template.metadata.labels["metacel.dev/parent-uid"]: "metacel.dev/parent-uid" is metacel's own`},
		{"the managed-by label", `          labels: {app.kubernetes.io/managed-by: helm}
`, `spec.children[1].template.metadata.labels["app.kubernetes.io/managed-by"]: "app.kubernetes.io/managed-by" is metacel's own`},
		{"metacel's annotation", `          annotations: {metacel.dev/deletion-policy: Orphan}
`, `spec.children[1].template.metadata.annotations["metacel.dev/deletion-policy"]: "metacel.dev/deletion-policy" is metacel's own`},
		{"labels and annotations of one's own", `          labels: {app: x, example.com/team: a}
          annotations: {app.kubernetes.io/managed-by: not-a-label-here}
`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("p.yaml", []byte(placementPolicy("demo.rtfm.co.ua/v1", "myapps", child(tc.metadata))), kinds.NewCatalog())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("load: %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("load: %v\nwant: %s", err, tc.want)
			}
		})
	}
}

// A Secret's data or a ConfigMap's binaryData that is no base64 failed every render, the API
// server saying only that the object "cannot be handled": an error at the key, saying what to do.
func TestAValueThatIsNoBase64IsAnErrorAtItsKey(t *testing.T) {
	tests := []struct {
		name, template, want string
	}{
		{"a Secret's data", `{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {password: "not base64!!"}}`,
			`spec.children[0].template.data.password: is not base64, which a Secret's data holds: write the text under stringData`},
		{"a ConfigMap's binaryData", `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, binaryData: {blob: "%%%"}}`,
			`spec.children[0].template.binaryData.blob: is not base64, which a ConfigMap's binaryData holds: put text under data`},
		{"base64, with a line break", `{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {a: "aGVs\nbG8="}}`, ""},
		{"a value an expression gives", `{apiVersion: v1, kind: Secret, metadata: {name: s}, data: {a: "${parent.metadata.name}"}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(testpolicies.YAML("myapp-head", testpolicies.Fills{"RESOURCE": "secrets"}), "resource: secrets", "resource: secrets\n    - {apiVersion: v1, resource: configmaps}", 1) +
				"  children:\n    - id: c\n      template: " + tc.template + "\n"
			_, err := Load("p.yaml", []byte(text), kinds.NewCatalog())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("load: %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("load: %v\nwant: %s", err, tc.want)
			}
		})
	}
}
