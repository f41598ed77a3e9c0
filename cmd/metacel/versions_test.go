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
	// v1alpha1's size has a default; v1's replicas too
	defaulted := filepath.Join(t.TempDir(), "cache.yaml")
	text = strings.Replace(string(lossy), `size: {type: string, pattern: '^[0-9]+$', required: true}`, `size: {type: string, pattern: '^[0-9]+$', default: "2"}`, 1)
	text = strings.Replace(text, `replicas: {type: integer, minimum: 0, required: true}`, `replicas: {type: integer, minimum: 0, default: 1}`, 1)
	if err := os.WriteFile(defaulted, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) string { return writeIn(t, dir, name, text) }
	noSize := write("no-size.yaml", "apiVersion: versions.example.com/v1alpha1\nkind: Cache\nmetadata: {name: sessions, namespace: default}\nspec: {image: redis:7}\n")
	unknown := write("unknown.yaml", "apiVersion: versions.example.com/v1alpha1\nkind: Cache\nmetadata: {name: sessions, namespace: default}\nspec: {size: \"3\", image: redis:7, bogus: x}\n")
	noReplicas := write("no-replicas.yaml", "apiVersion: versions.example.com/v1\nkind: Cache\nmetadata: {name: sessions, namespace: default}\nspec: {template: {image: redis:7}}\n")
	tests := []struct {
		name    string
		args    []string
		wantErr string
		want    []string // in stdout, or in stderr with an error
	}{
		{name: "render admits a parent at its own version before it converts it: its defaults",
			args: []string{"render", "--policy", defaulted, "--parent", noSize},
			want: []string{`replicas: "2"`}},
		{name: "render admits a parent at its own version before it converts it: a field it does not declare",
			args:    []string{"render", "--policy", cachePolicy, "--parent", unknown},
			wantErr: "exit",
			want:    []string{"spec.bogus"}},
		{name: "validate checks a sample at another version at that version",
			args:    []string{"validate", cachePolicy, unknown},
			wantErr: "exit",
			want:    []string{"spec.bogus"}},
		{name: "validate converts a sample with its defaults, as the API server stores it",
			args: []string{"validate", defaulted, noReplicas},
			want: []string{`Cache default/sessions is a valid parent of policy "cache"`}},
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
			errText := ""
			if err != nil {
				errText = err.Error()
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut+errText, w) {
					t.Errorf("output lacks %q:\nstdout:\n%s\nstderr:\n%s", w, out, errOut)
				}
			}
		})
	}
}

// An object of the policy's parent resource at another version that the policy does not declare
// (a built-in kind's other version, a CRD converting by its own webhook) is no sample of the
// policy: validate leaves it, as before it checked samples at other versions.
func TestValidateLeavesAnObjectAtAVersionThePolicyDoesNotDeclare(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string { return writeIn(t, dir, name, text) }
	// the Cache CRD of two versions, given with --crd, to a policy that declares none
	crd, crdErr, err := runCLI(t, "crd", cachePolicy)
	if err != nil {
		t.Fatalf("crd: %v\n%s", err, crdErr)
	}
	crdFile := write("cache-crd.yaml", crd)
	policy := write("caches.yaml", `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: caches}
spec:
  parentResource: {apiVersion: versions.example.com/v1, resource: caches}
`)
	sample := input("cache-v1alpha1.yaml")
	out, errOut, err := runCLI(t, "validate", "--crd", crdFile, policy, sample)
	if err != nil {
		t.Fatalf("validate: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
}

// writeIn writes text into the file name of dir, and returns its path.
func writeIn(t *testing.T, dir, name, text string) string {
	t.Helper()
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
