package manifest

import "testing"

func TestHeadsSayWhatAFileHolds(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"an object by kind, namespace and name", "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: ns}\n", "Pod ns/a"},
		{"a cluster-scoped object by kind and name", "kind: Namespace\nmetadata: {name: a}\n", "Namespace a"},
		{"a document that is no object by its keys", "policy: p.yaml\ntests: []\n", "a YAML document with keys policy, tests"},
		{"empty documents are left out", "---\n# nothing\n---\nkind: Namespace\nmetadata: {name: a}\n---\n", "Namespace a"},
		{"several documents, the first three named", "kind: A\n---\nkind: B\n---\nkind: C\n---\nkind: D\n", "4 documents: A, B, C, …"},
		{"an empty file holds none", "", "no document"},
		{"JSON is read as YAML", `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}`, "ConfigMap c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			heads, err := Heads([]byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if got := Describe(heads); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := Heads([]byte("a: [b\n")); err == nil {
		t.Error("a file that is not YAML must be an error")
	}
}
