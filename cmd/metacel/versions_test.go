package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cachePolicy is the example policy of a parent with two versions (package conversion's).
var cachePolicy = filepath.Join(repo, "runtime", "conversion", "testdata", "cache.yaml")

func TestAParentOfSeveralVersionsOffline(t *testing.T) {
	lossy, err := os.ReadFile(cachePolicy)
	if err != nil {
		t.Fatal(err)
	}
	off := filepath.Join(t.TempDir(), "cache.yaml")
	// a conversion that reads every field but does not give it back as it was
	text := strings.Replace(string(lossy), "size: ${string(parent.spec.replicas)}", "size: ${string(parent.spec.replicas + 1)}", 1)
	if err := os.WriteFile(off, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
		want    []string // in stdout, or in stderr with an error
	}{
		{name: "render converts a parent given at another version, as the API server would",
			args: []string{"render", "--policy", cachePolicy, "--parent", input("cache-v1alpha1.yaml")},
			want: []string{`replicas: "3"`, "image: redis:7"}},
		{name: "validate converts each sample to every other version and back",
			args: []string{"validate", cachePolicy, input("cache-v1.yaml")},
			want: []string{`Cache default/sessions is a valid parent of policy "cache"`}},
		{name: "validate fails a sample whose round trip changes it, saying what changed",
			args:    []string{"validate", off, input("cache-v1.yaml")},
			wantErr: "exit",
			want:    []string{`a round trip through v1alpha1 changes Cache "default/sessions": spec was map[replicas:3`, "carry every field in toHub and fromHub"}},
		{name: "test converts a test's parent given at another version",
			args: []string{"test", filepath.Join(repo, "runtime", "conversion", "testdata", "cache_test.yaml")},
			want: []string{"2 tests"}},
		{name: "crd prints every version, the storage one marked, converted by the runtime's webhook",
			args: []string{"crd", cachePolicy},
			want: []string{"name: v1alpha1", "deprecated: true", "strategy: Webhook", "name: metacel-webhook", "path: /convert", "storage: false"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLI(t, tc.args...)
			if (err != nil) != (tc.wantErr != "") {
				t.Fatalf("err = %v, want error %v\nstdout:\n%s\nstderr:\n%s", err, tc.wantErr != "", out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\nstdout:\n%s\nstderr:\n%s", w, out, errOut)
				}
			}
		})
	}
}
