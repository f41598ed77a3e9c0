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
		// it named the template only, with no file or line
		{"an evaluation error names the file, line and field of the expression",
			[]string{"render", "--policy", input("lamp-rooms-policy.yaml"), "--parent", input("lamp-without-rooms.yaml")},
			input("lamp-rooms-policy.yaml") + `:26: EvaluationError: spec.children[0].template.data.color: evaluate "parent.spec.rooms[0]": no such key: rooms`},
		// the parent was rendered unchecked, though a CRD file was given to check it
		{"a CRD file that does not define the parent is an error",
			[]string{"render", "--policy", repo + "/policies/myapp.yaml", "--parent", repo + "/samples/myapp.yaml", "--crd", repo + "/crds/memcached.yaml"},
			`spec.parentResource: myapps.demo.rtfm.co.ua is defined by none of the CRD files given (they define memcacheds.cache.example.com)`},
		// the runtime refuses a child there (NamespaceNotAllowed): render said it applied and was Ready
		{"a child in the runtime's policy namespace is refused",
			[]string{"render", "--policy", repo + "/policies/myapp.yaml", "--parent", input("myapp-in-policy-namespace.yaml")},
			`NamespaceNotAllowed: spec.children[0]: child "pod": Pod metacel-system/system-pod is in namespace "metacel-system"`},
		// its resource guessed from the kind lowercased is the parent's: it passed as a parent the API server refuses
		{"a parent kind in the wrong case is refused",
			[]string{"render", "--policy", repo + "/policies/myapp.yaml", "--parent", input("myapp-lowercase-kind.yaml"), "--crd", repo + "/crds/myapp.yaml"},
			`kind: demo.rtfm.co.ua/v1 myapps holds objects of kind "MyApp", not "myapp": write kind: MyApp`},
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

// TestRenderObservedMatchesAsTheRuntime checks that an observed object feeds the status only when
// it is the desired child itself: same kind, namespace and name, and this parent's (its
// parent-uid label or controller ownerReference), as the runtime matches children. The status
// and Ready must then agree: an object that is not the child makes neither "3 of 3 available"
// nor Ready.
func TestRenderObservedMatchesAsTheRuntime(t *testing.T) {
	tests := []struct {
		name     string
		observed string
		stderr   string // what render says of the object
	}{
		{"a child under an old name is to be deleted, not read", "deployment-old-name.yaml",
			"delete   apps/v1 Deployment default/memcached-sample-old: no longer desired"},
		{"an object in a namespace the parent may not reach is ignored, not deleted", "deployment-other-namespace.yaml",
			`ignored observed Deployment elsewhere/memcached-sample: not a child of this parent: it is in namespace "elsewhere", where this Memcached's children may not be`},
		{"another parent's object of the child's name is a conflict, not read", "deployment-other-parent.yaml",
			"conflict apps/v1 Deployment default/memcached-sample: its metacel.dev/parent-uid label names another parent"},
		{"an object another owner controls is a conflict, not read", "deployment-other-owner.yaml",
			"conflict apps/v1 Deployment default/memcached-sample: its controller ownerReference names another owner"},
		{"an object with no mark of the parent under a misspelt name is ignored with a note, never deleted", "deployment-misspelt.yaml",
			"note: ignored observed Deployment default/memcached-sampel: not a child of this parent: no desired child has its name, and it carries no mark of this Memcached " +
				"(no metacel.dev/parent-uid or metacel.dev/child-id label, no ownerReference to it, no managed fields of metacel's): offline, an object given by hand is deleted only when it carries one\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLI(t, seed("memcached", "--observed", input(tc.observed))...)
			if err != nil {
				t.Fatalf("render: %v\n%s", err, errOut)
			}
			for _, want := range []string{"0 of 3 replicas available", "waiting for Deployment default/memcached-sample"} {
				if !strings.Contains(out, want) {
					t.Errorf("status must not read an object that is not the desired child: want %q in\n%s", want, out)
				}
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, errOut)
			}
			if strings.HasPrefix(tc.stderr, "note: ignored") && strings.Contains(errOut, "changes to observed objects") {
				t.Errorf("an ignored object must not be changed:\n%s", errOut)
			}
		})
	}
}

// TestRenderChecksTheParentLikeTheAPIServer checks that render admits the parent as the API server
// admits a create (its CRD's defaults, schema and rules), gives a parent without a UID a stable
// one and says so, and checks the computed status against the CRD's status schema.
func TestRenderChecksTheParentLikeTheAPIServer(t *testing.T) {
	gadget := func(parent string) []string {
		return []string{"render", "--policy", input("gadget-policy.yaml"), "--crd", input("gadget-crd.yaml"), "--parent", input(parent)}
	}
	tests := []struct {
		name      string
		args      []string
		wantErr   string   // the error, or "" for success
		wantOut   []string // in stdout
		wantNotes []string // in stderr
	}{
		{name: "a field of the wrong type is refused, naming the field, its value and the rule",
			args:    gadget("gadget-wrong-type.yaml"),
			wantErr: `gadget-wrong-type.yaml: Gadget default/gizmo is invalid, the API server would refuse it: spec.maxReplicas: Invalid value: "two": spec.maxReplicas in body must be of type integer`},
		{name: "a field the schema does not declare is refused",
			args:    gadget("gadget-unknown-field.yaml"),
			wantErr: "spec.maxReplica: unknown field: the CRD's schema does not declare it"},
		{name: "a parent failing the CRD's validation rule is refused with the rule's message",
			args:    gadget("gadget-bad-range.yaml"),
			wantErr: "spec: Invalid value: minReplicas must not exceed maxReplicas"},
		{name: "a status field of the wrong type is an error at the policy's status field, with the value computed",
			args:    gadget("gadget-labelled.yaml"),
			wantErr: `gadget-policy.yaml:20: spec.status.replicas: the computed status.replicas does not fit the CRD's status schema, the API server would refuse the status write: Invalid value: "two": replicas in body must be of type integer`},
		{name: "the CRD's defaults are in the parent the policy reads",
			args:    gadget("gadget.yaml"),
			wantOut: []string{"range: 1-2", "minReplicas: 1", "replicas: 2"}},
		{name: "a parent without a UID gets a stable one, and says so",
			args: gadget("gadget.yaml"),
			wantOut: []string{"metacel.dev/parent-uid: f3625a7d-ee76-8b89-aba9-56b28884b308", "uid: f3625a7d-ee76-8b89-aba9-56b28884b308",
				"generation: 1", "observedGeneration: 1"},
			wantNotes: []string{"note: Gadget default/gizmo: gave it metadata.uid f3625a7d-ee76-8b89-aba9-56b28884b308 (derived from its kind, namespace and name) and metadata.generation 1, as the API server would on create"}},
		{name: "a parent with a UID keeps it",
			args:    seed("myapp", "--parent", input("myapp-no-banner.yaml")),
			wantOut: []string{"uid: 0b6f1e2a-8f1c-4a57-9d1e-3f3c1a2b4c5d", "observedGeneration: 2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLI(t, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want it to contain %q", err, tc.wantErr)
				}
				if out != "" {
					t.Errorf("a refused render must print nothing, got:\n%s", out)
				}
				return
			}
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if strings.Contains(out, `uid: ""`) {
				t.Errorf("an empty UID landed in the output:\n%s", out)
			}
			for _, want := range tc.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			for _, want := range tc.wantNotes {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
		})
	}
}

// TestRenderListsTheChangesToObservedChildren feeds render the children it printed for a seed's
// sample, then changes the parent or the policy: what the runtime would do to those children is on
// stderr.
func TestRenderListsTheChangesToObservedChildren(t *testing.T) {
	same := func(s string) string { return s }
	tests := []struct {
		name                   string
		seed                   string
		editParent, editPolicy func(string) string
		want                   string // on stderr; "" for no change
	}{
		{"a Recreate child whose spec changes is recreated", "myapp",
			func(p string) string { return strings.Replace(p, "image: nginx:latest", "image: nginx:1.27", 1) }, same,
			"recreate v1 Pod default/example-app-pod: its resource's updateStrategy is Recreate and the policy wants it changed"},
		{"an unchanged Recreate child is kept", "myapp", same, same, ""},
		{"an InPlace child is updated, not recreated", "memcached",
			func(p string) string { return strings.Replace(p, "size: 3", "size: 5", 1) }, same, ""},
		{"an OnDelete child is never recreated", "whalesay",
			func(p string) string { return strings.Replace(p, "message:", "message: changed", 1) }, same, ""},
		{"a child the policy renames is deleted under its old name", "memcached", same,
			func(p string) string {
				return strings.Replace(p, `name: "${parent.metadata.name}"`, `name: "${parent.metadata.name}-v2"`, 1)
			},
			"delete   apps/v1 Deployment default/memcached-sample: no longer desired"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, _, err := runCLI(t, seed(tc.seed)...)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			dir := t.TempDir()
			write := func(name, text string) string {
				t.Helper()
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				return p
			}
			edited := func(dir string, edit func(string) string) string {
				t.Helper()
				data, err := os.ReadFile(filepath.Join(repo, dir, tc.seed+".yaml"))
				if err != nil {
					t.Fatal(err)
				}
				return write(dir+".yaml", edit(string(data)))
			}
			children := first[:strings.LastIndex(first, "---\n")]
			_, errOut, err := runCLI(t, seed(tc.seed, "--policy", edited("policies", tc.editPolicy), "--parent", edited("samples", tc.editParent),
				"--observed", write("observed.yaml", children))...)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if tc.want == "" && strings.Contains(errOut, "changes to observed objects") {
				t.Errorf("want no change, got:\n%s", errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, errOut)
			}
		})
	}
}

// TestRenderPatchesBookkeepingNeverRecreates feeds render the children as earlier runtimes
// rendered them (testdata/inputs/children-before-*: a runtime before the shard-slot label, one
// before the content hash), for each update strategy: what differs is metacel's own bookkeeping,
// so the child's metadata is patched, never the child recreated or written whole; a change of
// what the policy computes still is one.
func TestRenderPatchesBookkeepingNeverRecreates(t *testing.T) {
	tests := []struct {
		name, seed, observed string
		edit                 func(string) string // of the parent
		want, notWant        string              // on stderr
	}{
		{"a Recreate child from before the shard-slot label", "myapp", "children-before-shard-slot-myapp.yaml", nil,
			"update-bookkeeping v1 Pod default/example-app-pod: update bookkeeping (label metacel.dev/policy-name set, label metacel.dev/shard-slot set, annotation metacel.dev/content-hash set, annotation metacel.dev/desired-hash removed)", "  recreate "},
		{"a Recreate child from before the content hash", "myapp", "children-before-content-hash-myapp.yaml", nil,
			"update-bookkeeping v1 Pod default/example-app-pod: update bookkeeping (label metacel.dev/policy-name set, annotation metacel.dev/content-hash set, annotation metacel.dev/desired-hash removed)", "  recreate "},
		{"an OnDelete child from before the shard-slot label", "whalesay", "children-before-shard-slot-whalesay.yaml", nil,
			"update-bookkeeping batch/v1 Job default/example-whalesay-job: update bookkeeping (label metacel.dev/policy-name set, label metacel.dev/shard-slot set, annotation metacel.dev/content-hash set, annotation metacel.dev/desired-hash removed)", "  recreate "},
		{"an InPlace child from before the shard-slot label", "memcached", "children-before-shard-slot-memcached.yaml", nil,
			"update-bookkeeping apps/v1 Deployment default/memcached-sample: update bookkeeping (label metacel.dev/policy-name set, label metacel.dev/shard-slot set, annotation metacel.dev/content-hash set, annotation metacel.dev/desired-hash removed)", "  recreate "},
		{"a Recreate child from before the content hash whose spec the policy changes is recreated", "myapp", "children-before-content-hash-myapp.yaml",
			func(p string) string { return strings.Replace(p, "image: nginx:latest", "image: nginx:1.27", 1) },
			"recreate v1 Pod default/example-app-pod: its resource's updateStrategy is Recreate and the policy wants it changed", "  update-bookkeeping "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := seed(tc.seed, "--observed", input(tc.observed))
			if tc.edit != nil {
				data, err := os.ReadFile(filepath.Join(repo, "samples", tc.seed+".yaml"))
				if err != nil {
					t.Fatal(err)
				}
				parent := filepath.Join(t.TempDir(), "parent.yaml")
				if err := os.WriteFile(parent, []byte(tc.edit(string(data))), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--parent", parent)
			}
			_, errOut, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("render: %v\n%s", err, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, errOut)
			}
			if strings.Contains(errOut, tc.notWant) {
				t.Errorf("stderr has %q:\n%s", tc.notWant, errOut)
			}
		})
	}
}

// TestRenderReadinessFollowsTheSyncsWrites renders a parent with its CronJob observed as it is
// (not suspended): the status is rendered again with the children as the sync's writes leave
// them (decide.AfterWrites), an in-place update included, as the runtime's status after its write.
func TestRenderReadinessFollowsTheSyncsWrites(t *testing.T) {
	tests := []struct {
		name, parent string
		want         []string // in stdout
	}{
		{"a CronJob the parent wants suspended is not ready once updated in place", "backup-paused.yaml",
			[]string{"suspend: true", "message: waiting for CronJob default/nightly\n    observedGeneration: 1\n    reason: ChildrenNotReady\n    status: \"False\"\n    type: Ready"}},
		{"a CronJob the parent wants as it is stays ready", "backup-running.yaml",
			[]string{"suspend: false", "message: 1 child ready\n    observedGeneration: 1\n    reason: ChildrenReady\n    status: \"True\"\n    type: Ready"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLI(t, "render", "--policy", input("backup-policy.yaml"), "--parent", input(tc.parent),
				"--observed", input("cronjob-not-suspended.yaml"))
			if err != nil {
				t.Fatalf("render: %v\n%s", err, errOut)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
