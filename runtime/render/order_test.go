package render

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/kinds"
)

// app reads the name of db, listed after it: db is applied first, app once db exists.
const appAfterDB = `  children:
    - id: app
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: app}, data: {db: "${children.db.metadata.name}"}}
    - id: db
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: db}}
`

func TestAChildThatReadsAnotherIsAppliedOnceItExists(t *testing.T) {
	db := obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: db, namespace: ns, labels: {metacel.dev/child-id: db, metacel.dev/parent-uid: u-1}}}")
	app := obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: app, namespace: ns, labels: {metacel.dev/child-id: app, metacel.dev/parent-uid: u-1}}}")
	tests := []struct {
		name          string
		observed      []*unstructured.Unstructured
		wantChildren  []string
		wantHeld      string
		wantUndesired int
	}{
		{"before db exists, app waits: only db is desired", nil, []string{"db"},
			"after ConfigMap ns/db exists: it reads children.db", 0},
		{"once db exists, app is desired, after it", []*unstructured.Unstructured{db}, []string{"db", "app"}, "", 0},
		{"an app that exists while db does not is kept as it is, not deleted", []*unstructured.Unstructured{app}, []string{"db"},
			"after ConfigMap ns/db exists: it reads children.db", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, kids, err := RenderObserved(t.Context(), load(t, appAfterDB), Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()}, tc.observed)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range out.Children {
				ids = append(ids, c.ID)
			}
			if len(ids) != len(tc.wantChildren) || (len(ids) > 0 && ids[0] != tc.wantChildren[0]) || (len(ids) > 1 && ids[1] != tc.wantChildren[1]) {
				t.Errorf("desired children %v, want %v", ids, tc.wantChildren)
			}
			held := ""
			if len(out.Held) > 0 {
				held = out.Held[0].Why
			}
			if held != tc.wantHeld {
				t.Errorf("held %q, want %q", held, tc.wantHeld)
			}
			if len(kids.Undesired) != tc.wantUndesired {
				t.Errorf("undesired %v, want %d", kids.Undesired, tc.wantUndesired)
			}
			if tc.wantHeld != "" && out.Ready() {
				t.Errorf("a parent with an entry that waits is Ready")
			}
		})
	}
}
