package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update regenerates the golden files: METACEL_UPDATE_GOLDEN=1 go test ./cmd/metacel
var update = os.Getenv("METACEL_UPDATE_GOLDEN") != ""

const repo = "../.."

// runCLI runs the metacel command in-process and returns its output and error.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

func seed(name string, extra ...string) []string {
	return append([]string{"render",
		"--policy", filepath.Join(repo, "policies", name+".yaml"),
		"--parent", filepath.Join(repo, "samples", name+".yaml"),
		"--crd", filepath.Join(repo, "crds", name+".yaml"),
	}, extra...)
}

func input(name string) string { return filepath.Join("testdata", "inputs", name) }

func TestRenderGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"myapp", seed("myapp")},
		{"myapp-running", seed("myapp", "--observed", input("pod-running.yaml"))},
		{"myapp-no-banner", []string{"render", "--policy", repo + "/policies/myapp.yaml", "--parent", input("myapp-no-banner.yaml"), "--crd", repo + "/crds/myapp.yaml"}},
		{"myingress", seed("myingress")},
		{"myingress-active", seed("myingress", "--observed", input("loadbalancer-active.yaml"))},
		{"whalesay", seed("whalesay")},
		{"whalesay-complete", seed("whalesay", "--observed", input("job-complete.yaml"))},
		{"configmapsync", seed("configmapsync", "--related", repo+"/samples/configmapsync.yaml")},
		{"configmapsync-synced", seed("configmapsync", "--related", repo+"/samples/configmapsync.yaml", "--observed", input("destination-synced.yaml"))},
		{"memcached", seed("memcached")},
		{"memcached-available", seed("memcached", "--observed", input("deployment-available.yaml"))},
		{"memcached-degraded", seed("memcached", "--observed", input("deployment-failed.yaml"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runCLI(t, tc.args...)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			golden(t, filepath.Join("testdata", "render", tc.name+".yaml"), out)
			again, _, _ := runCLI(t, tc.args...)
			if again != out {
				t.Error("a second render of the same inputs differs: output must be deterministic")
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"myapp without image fails validation with the seed's message",
			[]string{"render", "--policy", repo + "/policies/myapp.yaml", "--parent", input("myapp-no-image.yaml")},
			"ValidationFailed: Field 'spec.image' must be provided."},
		{"configmapsync without its source reports the missing source",
			seed("configmapsync"),
			"ValidationFailed: source ConfigMap default/app-config not found"},
		{"a parent of another resource is refused",
			[]string{"render", "--policy", repo + "/policies/myapp.yaml", "--parent", repo + "/samples/memcached.yaml"},
			`want exactly one object of policy "myapp"'s parent resource myapps.demo.rtfm.co.ua, found 0`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want it to contain %q", err, tc.want)
			}
			if out != "" {
				t.Errorf("a failed render must print no children, got:\n%s", out)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	crds := []string{}
	for _, n := range []string{"myapp", "myingress", "whalesay", "configmapsync", "memcached"} {
		crds = append(crds, "--crd", filepath.Join(repo, "crds", n+".yaml"))
	}
	out, errOut, err := runCLI(t, append([]string{"validate", filepath.Join(repo, "policies")}, crds...)...)
	if err != nil {
		t.Fatalf("validate policies/: %v\n%s", err, errOut)
	}
	if n := strings.Count(out, "is valid"); n != 5 {
		t.Errorf("want 5 valid policies, got %d:\n%s", n, out)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte(`apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: bad
spec:
  parentResource:
    apiVersion: demo.rtfm.co.ua/v1
    resource: myapps
  childResources:
    - {apiVersion: v1, resource: pods}
  children:
    - id: pod
      template:
        apiVersion: v1
        kind: Pod
        metadata:
          name: "${parent.spec.imgae}"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, err = runCLI(t, "validate", bad, "--crd", filepath.Join(repo, "crds", "myapp.yaml"))
	want := bad + ":17: spec.children[0].template.metadata.name: compile \"parent.spec.imgae\": undefined field 'imgae'"
	if err == nil || !strings.Contains(errOut, want) {
		t.Fatalf("got %v and\n%s\nwant an error containing\n%s", err, errOut, want)
	}
}

// golden compares got with a golden file, or rewrites it when METACEL_UPDATE_GOLDEN is set.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with METACEL_UPDATE_GOLDEN=1)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (regenerate with METACEL_UPDATE_GOLDEN=1):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff shows the lines that differ, with their numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n- %s\n+ %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
