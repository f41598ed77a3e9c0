package decide_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/preview"
	"metacel.dev/metacel/runtime/render"
)

// cronPolicy makes a CronJob whose suspend is the parent's data.suspend, ready when not suspended.
const cronPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: cron}
spec:
  parentResource: {apiVersion: v1, resource: configmaps}
  childResources:
    - {apiVersion: batch/v1, resource: cronjobs, updateStrategy: {method: METHOD}}
  children:
    - id: job
      template:
        apiVersion: batch/v1
        kind: CronJob
        metadata: {name: "${parent.metadata.name}-cron"}
        spec:
          schedule: "0 * * * *"
          suspend: "${parent.data.suspend == 'true'}"
          jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}}
      readyWhen: "!child.spec.suspend"
`

func load(t *testing.T, method string) *policy.Compiled {
	t.Helper()
	catalog, err := kinds.LoadCRDFiles(nil)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := policy.Load("cron.yaml", []byte(strings.ReplaceAll(cronPolicy, "METHOD", method)), catalog)
	if err != nil || len(compiled) != 1 {
		t.Fatalf("load: %v", err)
	}
	return compiled[0]
}

func object(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(text), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

const parent = `{apiVersion: v1, kind: ConfigMap, metadata: {name: p, namespace: ns, uid: p-1}, data: {suspend: "true"}}`

// cronJob is the parent's CronJob as a sync before this one left it (suspended or not),
// deleting when not "".
func cronJob(t *testing.T, c *policy.Compiled, suspend bool, deleting string) *unstructured.Unstructured {
	t.Helper()
	p := object(t, parent)
	p.Object["data"] = map[string]any{"suspend": fmt.Sprint(suspend)}
	out, err := render.Render(context.Background(), c, render.Input{Parent: p})
	if err != nil {
		t.Fatal(err)
	}
	obj := out.Children[0].Object.DeepCopy()
	obj.SetUID("c-1")
	if deleting != "" {
		obj.Object["metadata"].(map[string]any)["deletionTimestamp"] = deleting
	}
	return obj
}

// renamed is obj under another name.
func renamed(obj *unstructured.Unstructured, name string) *unstructured.Unstructured {
	obj = obj.DeepCopy()
	obj.SetName(name)
	return obj
}

func TestWrites(t *testing.T) {
	const deleting = "2026-11-26T00:00:00Z"
	tests := []struct {
		name, method string
		observed     func(c *policy.Compiled) []*unstructured.Unstructured
		want         string
	}{
		{"a missing child is created", "InPlace", nil, "create CronJob"},
		{"a child up to date needs no write", "InPlace", func(c *policy.Compiled) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{cronJob(t, c, true, "")}
		}, ""},
		{"a child that differs is applied", "InPlace", func(c *policy.Compiled) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{cronJob(t, c, false, "")}
		}, "update CronJob"},
		{"a Recreate child that differs is recreated", "Recreate", func(c *policy.Compiled) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{cronJob(t, c, false, "")}
		}, "recreate CronJob"},
		{"an OnDelete child that differs is left alone", "OnDelete", func(c *policy.Compiled) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{cronJob(t, c, false, "")}
		}, ""},
		{"a child being deleted is awaited", "Recreate", func(c *policy.Compiled) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{cronJob(t, c, false, deleting)}
		}, "await CronJob"},
		{"a child no longer desired is deleted", "InPlace", func(c *policy.Compiled) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{cronJob(t, c, true, ""), renamed(cronJob(t, c, true, ""), "p-old")}
		}, "delete CronJob"},
		{"a child no longer desired and going already is left alone", "InPlace", func(c *policy.Compiled) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{cronJob(t, c, true, ""), renamed(cronJob(t, c, true, deleting), "p-old")}
		}, ""},
		{"an object someone else holds the name of is a conflict", "InPlace", func(*policy.Compiled) []*unstructured.Unstructured {
			return []*unstructured.Unstructured{object(t, `{apiVersion: batch/v1, kind: CronJob, metadata: {name: p-cron, namespace: ns, uid: x, labels: {metacel.dev/parent-uid: other}}}`)}
		}, "conflict CronJob"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.method)
			var objs []*unstructured.Unstructured
			if tc.observed != nil {
				objs = tc.observed(c)
			}
			out, kids, err := render.RenderObserved(context.Background(), c, render.Input{Parent: object(t, parent)}, objs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range decide.Writes(out, kids, c) {
				kind := ""
				if s.Observed != nil {
					kind = s.Observed.GetKind()
				} else {
					kind = s.Child.Object.GetKind()
				}
				got = append(got, string(s.Action)+" "+kind)
			}
			if strings.Join(got, ",") != tc.want {
				t.Errorf("steps %q, want %q", strings.Join(got, ","), tc.want)
			}
		})
	}
}

// The status an offline sync computes is the one the runtime writes: rendered again with the
// children as the sync's writes leave them. Before, `metacel render` and `metacel test` judged
// readiness on the children as they were before the writes: a CronJob the sync suspends was
// Ready=True offline and Ready=False in the cluster.
func TestTheStatusOfflineSeesTheChildrenWritten(t *testing.T) {
	for _, method := range []string{"InPlace", "Recreate"} {
		t.Run(method, func(t *testing.T) {
			c := load(t, method)
			res, err := preview.Run(context.Background(), preview.Input{Policy: c, Parent: object(t, parent),
				Observed: []*unstructured.Unstructured{cronJob(t, c, false, "")}})
			if err != nil {
				t.Fatal(err)
			}
			var ready map[string]any
			conds, _, _ := unstructured.NestedSlice(res.Parent.Object, "status", "conditions")
			for _, c := range conds {
				if m := c.(map[string]any); m["type"] == "Ready" {
					ready = m
				}
			}
			if ready["status"] != "False" {
				t.Errorf("Ready %v, want False: the CronJob the sync writes is suspended", ready)
			}
		})
	}
}

// What metacel writes for itself (labels, annotations, the parent's ownerReference) is decided
// apart from what the policy computes: a child that differs only there gets its metadata
// patched, whatever its update strategy, and is never written whole nor recreated for it. Before,
// a child without a label a newer runtime writes was recreated (Recreate), applied (InPlace), or
// kept the old label for ever (OnDelete).
func TestBookkeepingAloneIsPatchedNeverRewritten(t *testing.T) {
	edit := func(f func(meta map[string]any)) func(*unstructured.Unstructured) {
		return func(obj *unstructured.Unstructured) { f(obj.Object["metadata"].(map[string]any)) }
	}
	labels := func(m map[string]any) map[string]any { return m["labels"].(map[string]any) }
	annotations := func(m map[string]any) map[string]any { return m["annotations"].(map[string]any) }
	tests := []struct {
		name string
		// suspend is the observed CronJob's content (the parent wants true)
		suspend bool
		edit    func(*unstructured.Unstructured)
		// want is the step of each update strategy: InPlace, Recreate, OnDelete
		want [3]string
		// patch is what the bookkeeping patch says it changes
		patch string
	}{
		{"a label the runtime writes is missing (written before it had it)", true,
			edit(func(m map[string]any) { delete(labels(m), contract.LabelShardSlot) }),
			[3]string{"update-bookkeeping", "update-bookkeeping", "update-bookkeeping"}, "label metacel.dev/shard-slot set"},
		{"a child of a runtime before the policy-name label: its policy named by the legacy key alone", true,
			edit(func(m map[string]any) { delete(labels(m), contract.LabelChildPolicyName) }),
			[3]string{"update-bookkeeping", "update-bookkeeping", "update-bookkeeping"}, "label metacel.dev/policy-name set"},
		{"a child of a later runtime that retired the legacy key: its policy named by the new key alone", true,
			edit(func(m map[string]any) { delete(labels(m), contract.LabelChildPolicyLegacy) }),
			[3]string{"update-bookkeeping", "update-bookkeeping", "update-bookkeeping"}, "label metacel.dev/policy set"},
		{"a label the runtime writes has another value (edited)", true,
			edit(func(m map[string]any) { labels(m)[contract.LabelChildID] = "other" }),
			[3]string{"update-bookkeeping", "update-bookkeeping", "update-bookkeeping"}, "label metacel.dev/child-id set"},
		{"a retired annotation is still there", true,
			edit(func(m map[string]any) { annotations(m)[contract.AnnotationDesiredHash] = "0123456789abcdef" }),
			[3]string{"update-bookkeeping", "update-bookkeeping", "update-bookkeeping"}, "annotation metacel.dev/desired-hash removed"},
		{"the deletion policy of a child no longer Orphan is still there", true,
			edit(func(m map[string]any) { annotations(m)[contract.AnnotationDeletionPolicy] = "Orphan" }),
			[3]string{"update-bookkeeping", "update-bookkeeping", "update-bookkeeping"}, "annotation metacel.dev/deletion-policy removed"},
		{"the parent's ownerReference is missing", true,
			edit(func(m map[string]any) { delete(m, "ownerReferences") }),
			[3]string{"update-bookkeeping", "update-bookkeeping", "update-bookkeeping"}, "the parent's ownerReference set"},
		{"a key of a later runtime is left alone", true,
			edit(func(m map[string]any) {
				labels(m)["metacel.dev/later"] = "x"
				annotations(m)["metacel.dev/later"] = "y"
			}),
			[3]string{"", "", ""}, ""},
		{"content and bookkeeping both differ: the content decides, an OnDelete child keeps its content hash", false,
			edit(func(m map[string]any) { delete(labels(m), contract.LabelShardSlot) }),
			[3]string{"update", "recreate", "update-bookkeeping"}, "label metacel.dev/shard-slot set"},
	}
	for _, tc := range tests {
		for i, method := range []string{"InPlace", "Recreate", "OnDelete"} {
			t.Run(tc.name+"/"+method, func(t *testing.T) {
				c := load(t, method)
				obs := cronJob(t, c, tc.suspend, "")
				hash := obs.GetAnnotations()[contract.AnnotationContentHash]
				tc.edit(obs)
				out, kids, err := render.RenderObserved(context.Background(), c, render.Input{Parent: object(t, parent)}, []*unstructured.Unstructured{obs})
				if err != nil {
					t.Fatal(err)
				}
				steps := decide.Writes(out, kids, c)
				var got []string
				for _, s := range steps {
					got = append(got, string(s.Action))
				}
				if strings.Join(got, ",") != tc.want[i] {
					t.Fatalf("steps %q, want %q", got, tc.want[i])
				}
				if tc.want[i] != "update-bookkeeping" {
					return
				}
				if b := steps[0].Bookkeeping.String(); b != tc.patch {
					t.Errorf("patch %q, want %q", b, tc.patch)
				}
				after := decide.Written(steps)[0]
				if after.GetUID() != "c-1" || after.GetLabels()[contract.LabelShardSlot] == "" || after.GetLabels()[contract.LabelChildID] != "job" ||
					after.GetLabels()[contract.LabelChildPolicyName] != "cron" || after.GetLabels()[contract.LabelChildPolicyLegacy] != "cron" ||
					len(after.GetOwnerReferences()) != 1 || after.GetAnnotations()[contract.AnnotationDesiredHash] != "" ||
					after.GetAnnotations()[contract.AnnotationDeletionPolicy] != "" {
					t.Errorf("after the patch: %v", after.Object["metadata"])
				}
				if got := after.GetAnnotations()[contract.AnnotationContentHash]; got != hash {
					t.Errorf("content hash after the patch %q, want the one the child held, %q", got, hash)
				}
				if next, ok := decide.StepFor(&out.Children[0], after); ok && tc.suspend {
					t.Errorf("the sync after the patch: %s (%s), want none", next.Action, next.Why)
				}
			})
		}
	}
}

// A converged child read from the cache (projected: policy.Compiled.Kept) is as up to date as read
// whole. The no-op check matches a keyed list's items by every key, a port's protocol too, which
// the template leaves to its default: before the cache kept every key, a UDP port another writer
// put first read as TCP, and the Service was applied at every sync (DriftConflict after five).
func TestAConvergedChildReadFromTheCacheNeedsNoWrite(t *testing.T) {
	text := strings.NewReplacer("GROUPVERSION", "v1", "RESOURCE", "services", "METHOD", "InPlace", "TEMPLATE", `        apiVersion: v1
        kind: Service
        metadata: {name: "${parent.metadata.name}-c"}
        spec: {selector: {app: x}, ports: [{name: dns, port: "${int(parent.data.b)}"}]}
`).Replace(immutablePolicy)
	compiled, err := policy.Load("imm.yaml", []byte(text), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	c := compiled[0]
	p := object(t, parent)
	p.Object["data"] = map[string]any{"b": "53"}
	out, err := render.Render(context.Background(), c, render.Input{Parent: p})
	if err != nil {
		t.Fatal(err)
	}
	obs := out.Children[0].Object.DeepCopy()
	obs.SetUID("c-1")
	obs.Object["spec"].(map[string]any)["ports"] = []any{
		map[string]any{"name": "dns-udp", "port": int64(53), "protocol": "UDP", "targetPort": int64(53)},
		map[string]any{"name": "dns", "port": int64(53), "protocol": "TCP", "targetPort": int64(53)},
	}
	cached := c.Kept([]*unstructured.Unstructured{obs})
	out, kids, err := render.RenderObserved(context.Background(), c, render.Input{Parent: p}, cached)
	if err != nil {
		t.Fatal(err)
	}
	if steps := decide.Writes(out, kids, c); len(steps) != 0 {
		t.Errorf("steps %v, want none", steps)
	}
}
