package plan

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/preview"
	"metacel.dev/metacel/runtime/render"
	"metacel.dev/metacel/test/testpolicies"
)

// gadget is the gadget policy (a MyApp labelled tier=gadget gets a ConfigMap, InPlace, and a
// Pod, Recreate); configResource and configChild are its parts that tests take out.
var gadget = testpolicies.YAML("gadget", nil)

const (
	configResource = "    - {apiVersion: v1, resource: configmaps}\n"
	configChild    = `    - id: config
      deletionPolicy: Delete
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}-config"}
        data: {greeting: hello}
`
)

var (
	myAppsGVR     = schema.GroupVersionResource{Group: "demo.rtfm.co.ua", Version: "v1", Resource: "myapps"}
	podsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// edit returns gadget with each pair of old → new replaced once.
func edit(t *testing.T, pairs ...string) string {
	t.Helper()
	out := gadget
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(out, pairs[i]) {
			t.Fatalf("the gadget policy has no %q", pairs[i])
		}
		out = strings.Replace(out, pairs[i], pairs[i+1], 1)
	}
	return out
}

func catalog(t *testing.T) *kinds.Catalog {
	t.Helper()
	cat, err := kinds.LoadCRDFiles([]string{filepath.Join("..", "..", "crds", "myapp.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func compile(t *testing.T, text string, m kinds.Mapper) *policy.Compiled {
	t.Helper()
	all, err := policy.Load("gadget.yaml", []byte(text), m)
	if err != nil || len(all) != 1 {
		t.Fatalf("load: %v (%d policies)", err, len(all))
	}
	return all[0]
}

// myApp is a live MyApp labelled tier=gadget; no image when image is "".
func myApp(name, image string) *unstructured.Unstructured {
	spec := map[string]any{}
	if image != "" {
		spec["image"] = image
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "demo.rtfm.co.ua/v1", "kind": "MyApp",
		"metadata": map[string]any{"name": name, "namespace": "default", "uid": "uid-" + name, "labels": map[string]any{"tier": "gadget"}},
		"spec":     spec,
	}}
}

// applied returns the children that version c renders for parent, as the API server holds them
// once metacel applied them: with a UID and metacel's managed fields.
func applied(t *testing.T, c *policy.Compiled, m kinds.Mapper, parent *unstructured.Unstructured) []runtime.Object {
	t.Helper()
	res, err := preview.Run(t.Context(), preview.Input{Policy: c, Parent: parent, Mapper: m})
	if err != nil {
		t.Fatalf("render %s: %v", parent.GetName(), err)
	}
	var out []runtime.Object
	for _, ch := range res.Output.Children {
		obj := ch.Object.DeepCopy()
		obj.SetUID(types.UID("uid-" + obj.GetName()))
		obj.SetResourceVersion("1")
		obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "metacel", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{}}`)}})
		out = append(out, obj)
	}
	return out
}

// recordChildren writes on parent the record of its children that the runtime writes after a
// sync (those without an ownerReference to it: cross-namespace, Orphan).
func recordChildren(parent *unstructured.Unstructured, children []runtime.Object) {
	objs := make([]*unstructured.Unstructured, len(children))
	for i, c := range children {
		objs[i] = c.(*unstructured.Unstructured)
	}
	if value, changed := render.RecordOf(parent, true).Renewed(objs); changed {
		annotations := parent.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[contract.AnnotationChildren] = value
		parent.SetAnnotations(annotations)
	}
}

// fakeCluster is a dynamic client over objs that records every write and answers dry runs:
// refused names the objects (by name or generateName) whose dry run fails.
type fakeCluster struct {
	*dynamicfake.FakeDynamicClient
	refused map[string]bool
}

func newFakeCluster(objs []runtime.Object, refused ...string) *fakeCluster {
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		myAppsGVR: "MyAppList", podsGVR: "PodList", configMapsGVR: "ConfigMapList", {Version: "v1", Resource: "namespaces"}: "NamespaceList",
	}, objs...)
	f := &fakeCluster{FakeDynamicClient: client, refused: map[string]bool{}}
	for _, r := range refused {
		f.refused[r] = true
	}
	answer := func(action clienttesting.Action) (bool, runtime.Object, error) {
		name := ""
		switch a := action.(type) {
		case clienttesting.CreateActionImpl:
			obj := a.GetObject().(*unstructured.Unstructured)
			name = obj.GetName() + obj.GetGenerateName()
			if _, err := client.Tracker().Get(a.GetResource(), a.GetNamespace(), obj.GetName()); err == nil && obj.GetName() != "" {
				return true, nil, apierrors.NewAlreadyExists(a.GetResource().GroupResource(), obj.GetName())
			}
		case clienttesting.PatchActionImpl:
			name = a.GetName()
		}
		if f.refused[name] {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, name, nil)
		}
		return true, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Status"}}, nil
	}
	client.PrependReactor("create", "*", answer)
	client.PrependReactor("patch", "*", answer)
	return f
}

// writes are the requests other than get, list and watch.
func (f *fakeCluster) writes() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range f.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a)
		}
	}
	return out
}

// checkDryRuns fails the test when a write is not a dry run of metacel's field manager, and
// returns the writes as "verb resource name".
func checkDryRuns(t *testing.T, writes []clienttesting.Action) []string {
	t.Helper()
	var out []string
	for _, a := range writes {
		switch a := a.(type) {
		case clienttesting.CreateActionImpl:
			obj := a.GetObject().(*unstructured.Unstructured)
			if !slices.Equal(a.CreateOptions.DryRun, []string{metav1.DryRunAll}) || a.CreateOptions.FieldManager != "metacel" {
				t.Errorf("create %s is no dry run of metacel: %+v", obj.GetName(), a.CreateOptions)
			}
			out = append(out, fmt.Sprintf("create %s %s%s", a.GetResource().Resource, obj.GetName(), obj.GetGenerateName()))
		case clienttesting.PatchActionImpl:
			o := a.PatchOptions
			if a.GetPatchType() == types.MergePatchType {
				if !slices.Equal(o.DryRun, []string{metav1.DryRunAll}) || o.FieldManager != "metacel" {
					t.Errorf("patch %s is no dry-run merge patch of metacel: %+v", a.GetName(), o)
				}
				out = append(out, fmt.Sprintf("patch %s %s %s", a.GetResource().Resource, a.GetName(), a.GetPatch()))
				continue
			}
			if !slices.Equal(o.DryRun, []string{metav1.DryRunAll}) || o.FieldManager != "metacel" || o.Force == nil || !*o.Force || a.GetPatchType() != types.ApplyPatchType {
				t.Errorf("patch %s is no forced dry-run apply of metacel: %s %+v", a.GetName(), a.GetPatchType(), o)
			}
			out = append(out, fmt.Sprintf("apply %s %s", a.GetResource().Resource, a.GetName()))
		default:
			t.Errorf("a write that is no dry run: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	return out
}

// summary lists a plan's parents' changes and errors, one line each.
func summary(p *Plan) []string {
	var out []string
	for _, parent := range p.Parents {
		for _, c := range parent.Children {
			line := parent.Name + ": " + c.String()
			if c.Disruptive {
				line += " (disruptive)"
			}
			for _, f := range c.Fields {
				line += "; " + f.String()
			}
			out = append(out, line)
		}
		for _, f := range parent.Status {
			out = append(out, parent.Name+": status."+f.String())
		}
		if parent.Readiness != nil {
			out = append(out, parent.Name+": readiness: "+parent.Readiness.String())
		}
		if parent.Failing() {
			out = append(out, parent.Name+": failing: "+parent.Error)
		}
	}
	return out
}

// readyOnceItExisted gives a parent the Ready condition a runtime wrote that called a child ready
// once it existed.
func readyOnceItExisted(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj.Object["status"] = map[string]any{"conditions": []any{map[string]any{
		"type": "Ready", "status": "True", "reason": "ChildrenReady", "message": "2 children ready", "lastTransitionTime": "2026-01-01T00:00:00Z",
	}}}
	return obj
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		// running is the running version ("": none), candidate the new one
		running, candidate string
		// parents are the live MyApps; each gets the children the running version renders
		parents []*unstructured.Unstructured
		// extra are other live objects
		extra []runtime.Object
		// refused names the objects whose dry run the API server refuses
		refused []string
		want    []string // summary, in order; a line ending in "…" is a prefix
		totals  Totals
		dryRuns []string // sorted
	}{
		{
			name:    "the same version changes nothing and sends nothing",
			running: gadget, candidate: gadget,
			parents: []*unstructured.Unstructured{myApp("a", "nginx"), myApp("b", "nginx")},
			totals:  Totals{Parents: 2},
		},
		{
			name:    "a new label on the Pod template recreates every Pod, as a disruptive change with the label",
			running: gadget, candidate: edit(t, `labels: {app: "${parent.metadata.name}"}`, `labels: {app: "${parent.metadata.name}", version: v2}`),
			parents: []*unstructured.Unstructured{myApp("a", "nginx"), myApp("b", "nginx")},
			want: []string{
				`a: recreate v1 Pod default/a-pod (disruptive); metadata.labels.version: (absent) → "v2"`,
				`b: recreate v1 Pod default/b-pod (disruptive); metadata.labels.version: (absent) → "v2"`,
			},
			totals:  Totals{Parents: 2, Changed: 2, Recreated: 2},
			dryRuns: []string{"create pods a-pod", "create pods b-pod"}, // generateName: the name is taken
		},
		{
			name:    "a Recreate child whose deletionPolicy alone changes gets its bookkeeping patched, not recreated",
			running: gadget, candidate: edit(t, "    - id: pod\n", "    - id: pod\n      deletionPolicy: Orphan\n"),
			parents: []*unstructured.Unstructured{myApp("a", "nginx")},
			want:    []string{`a: update-bookkeeping v1 Pod default/a-pod`},
			totals:  Totals{Parents: 1, Changed: 1, Bookkeeping: 1},
			dryRuns: []string{`patch pods a-pod {"metadata":{"annotations":{"metacel.dev/deletion-policy":"Orphan"},"ownerReferences":[],"resourceVersion":"1"}}`},
		},
		{
			name:    "a changed InPlace child is updated with a dry-run apply",
			running: gadget, candidate: edit(t, "greeting: hello", "greeting: bonjour"),
			parents: []*unstructured.Unstructured{myApp("a", "nginx")},
			want:    []string{`a: update v1 ConfigMap default/a-config; data.greeting: "hello" → "bonjour"`},
			totals:  Totals{Parents: 1, Changed: 1, Updated: 1},
			dryRuns: []string{"apply configmaps a-config"},
		},
		{
			name:      "a new policy creates every child, and the status it computes with them created (as the runtime's)",
			candidate: gadget,
			parents:   []*unstructured.Unstructured{myApp("a", "nginx")},
			want: []string{
				"a: create v1 ConfigMap default/a-config",
				"a: create v1 Pod default/a-pod",
				`a: status.conditions[type=Ready]: (absent) → {"message":"waiting for Pod default/a-pod (PodNotObserved: Pod phase not available)","observedGeneration":1,"reason":"ChildrenNotReady","status":"False","type":"Ready"}`,
				`a: status.conditions[type=Synced]: (absent) → {"message":"2 children applied","observedGeneration":1,"reason":"Synced","status":"True","type":"Synced"}`,
				`a: status.observedGeneration: (absent) → 1`,
				`a: status.phase: (absent) → "Pending"`,
			},
			totals:  Totals{Parents: 1, Changed: 1, Created: 2},
			dryRuns: []string{"create configmaps a-config", "create pods a-pod"},
		},
		{
			name:    "a Pod the API server refuses makes its parent failing, named with the error",
			running: gadget, candidate: edit(t, "- {name: app,", "- {name: app, ports: [{containerPort: 8080}],"), // valid offline: the fake API server refuses bad-pod
			parents: []*unstructured.Unstructured{myApp("a", "nginx"), myApp("bad", "nginx")},
			refused: []string{"bad-pod"},
			want: []string{
				`a: recreate v1 Pod default/a-pod (disruptive); spec.containers[name=app].ports: (absent) → [{"containerPort":8080}]`,
				`bad: recreate v1 Pod default/bad-pod (disruptive); spec.containers[name=app].ports: (absent) → [{"containerPort":8080}]`,
				`bad: failing: dry run of recreate v1 Pod default/bad-pod: Pod "bad-pod" is invalid…`,
			},
			totals:  Totals{Parents: 2, Changed: 2, Recreated: 2, Failing: 1},
			dryRuns: []string{"create pods a-pod", "create pods bad-pod"},
		},
		{
			name:    "a parent whose render fails is failing, and nothing is sent for it",
			running: gadget, candidate: edit(t, "greeting: hello", "greeting: bonjour"),
			parents: []*unstructured.Unstructured{myApp("a", "nginx")},
			extra:   []runtime.Object{myApp("no-image", "")},
			want: []string{
				`a: update v1 ConfigMap default/a-config; data.greeting: "hello" → "bonjour"`,
				`no-image: failing: ValidationFailed: Field 'spec.image' must be provided.`,
			},
			totals:  Totals{Parents: 2, Changed: 2, Updated: 1, Failing: 1},
			dryRuns: []string{"apply configmaps a-config"},
		},
		{
			name:    "a parent the labelSelector does not select is not planned",
			running: gadget, candidate: edit(t, "greeting: hello", "greeting: bonjour"),
			parents: []*unstructured.Unstructured{myApp("a", "nginx")},
			extra:   []runtime.Object{unlabelled(myApp("other", "nginx"))},
			want:    []string{`a: update v1 ConfigMap default/a-config; data.greeting: "hello" → "bonjour"`},
			totals:  Totals{Parents: 1, Changed: 1, Updated: 1},
			dryRuns: []string{"apply configmaps a-config"},
		},
		{
			name:    "a parent Ready by a runtime that called a child ready once it existed says it is not ready now, whatever the candidate",
			running: gadget, candidate: gadget,
			parents: []*unstructured.Unstructured{readyOnceItExisted(myApp("a", "nginx"))},
			want: []string{
				`a: readiness: status.conditions[type=Ready]: {"message":"2 children ready","reason":"ChildrenReady","status":"True"} → {"message":"waiting for Pod default/a-pod (PodNotObserved: Pod phase not available)","reason":"ChildrenNotReady","status":"False"}`,
			},
			totals: Totals{Parents: 1, Changed: 1, ReadinessChanged: 1},
		},
		{
			name:    "a child entry removed deletes its children",
			running: gadget, candidate: edit(t, configChild, ""),
			parents: []*unstructured.Unstructured{myApp("a", "nginx")},
			want: []string{
				"a: delete v1 ConfigMap default/a-config",
				`a: status.conditions[type=Synced].message: "2 children applied" → "1 child applied"`,
			},
			totals: Totals{Parents: 1, Changed: 1, Deleted: 1},
		},
		{
			name:    "a child entry removed releases its Orphan children",
			running: edit(t, "deletionPolicy: Delete", "deletionPolicy: Orphan"), candidate: edit(t, configChild, ""),
			parents: []*unstructured.Unstructured{myApp("a", "nginx")},
			want: []string{
				"a: release v1 ConfigMap default/a-config",
				`a: status.conditions[type=Synced].message: "2 children applied" → "1 child applied"`,
			},
			totals: Totals{Parents: 1, Changed: 1, Released: 1},
		},
		{
			name:    "a child resource removed deletes its children",
			running: gadget, candidate: edit(t, configChild, "", configResource, ""),
			parents: []*unstructured.Unstructured{myApp("a", "nginx")},
			want: []string{
				"a: delete v1 ConfigMap default/a-config",
				`a: status.conditions[type=Synced].message: "2 children applied" → "1 child applied"`,
			},
			totals: Totals{Parents: 1, Changed: 1, Deleted: 1},
		},
		{
			name:    "a new child whose name another object holds is a conflict",
			running: edit(t, configChild, ""), candidate: gadget,
			parents: []*unstructured.Unstructured{myApp("a", "nginx")},
			extra: []runtime.Object{&unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a-config", "namespace": "default"},
			}}},
			want: []string{
				"a: create v1 ConfigMap default/a-config",
				`a: status.conditions[type=Synced].message: "1 child applied" → "2 children applied"`,
				"a: failing: dry run of create v1 ConfigMap default/a-config: ChildConflict: ConfigMap default/a-config already exists and is not managed by this MyApp…",
			},
			totals:  Totals{Parents: 1, Changed: 1, Created: 1, Failing: 1},
			dryRuns: []string{"create configmaps a-config"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := catalog(t)
			in := Input{Candidate: compile(t, tt.candidate, cat), Mapper: cat}
			objs := slices.Clone(tt.extra)
			for _, p := range tt.parents {
				objs = append(objs, p)
			}
			if tt.running != "" {
				in.Running = compile(t, tt.running, cat)
				for _, p := range tt.parents {
					children := applied(t, in.Running, cat, p)
					objs = append(objs, children...)
					recordChildren(p, children)
				}
			}
			cluster := newFakeCluster(objs, tt.refused...)
			in.Client = cluster
			p, err := Run(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			got := summary(p)
			if !matches(got, tt.want) {
				t.Errorf("plan:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
			if p.Totals != tt.totals {
				t.Errorf("totals %+v, want %+v", p.Totals, tt.totals)
			}
			sent := checkDryRuns(t, cluster.writes())
			slices.Sort(sent) // parents are planned concurrently
			if !slices.Equal(sent, tt.dryRuns) {
				t.Errorf("dry runs %q, want %q", sent, tt.dryRuns)
			}
		})
	}
}

// matches compares lines; a wanted line ending in "…" is a prefix.
func matches(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if w, prefix := strings.CutSuffix(want[i], "…"); (prefix && !strings.HasPrefix(got[i], w)) || (!prefix && got[i] != w) {
			return false
		}
	}
	return true
}

func unlabelled(obj *unstructured.Unstructured) *unstructured.Unstructured {
	obj.SetLabels(nil)
	return obj
}

func TestRecreatedChildIsDryRunUnderAGeneratedName(t *testing.T) {
	cat := catalog(t)
	running := compile(t, gadget, cat)
	parent := myApp("a", "nginx")
	cluster := newFakeCluster(append([]runtime.Object{parent}, applied(t, running, cat, parent)...))
	candidate := compile(t, edit(t, "image: \"${parent.spec.image}\"", "image: \"${parent.spec.image}:2\""), cat)
	if _, err := Run(t.Context(), Input{Candidate: candidate, Running: running, Mapper: cat, Client: cluster}); err != nil {
		t.Fatal(err)
	}
	var creates []*unstructured.Unstructured
	for _, a := range cluster.writes() {
		if c, ok := a.(clienttesting.CreateActionImpl); ok {
			creates = append(creates, c.GetObject().(*unstructured.Unstructured))
		}
	}
	if len(creates) != 1 {
		t.Fatalf("want one dry-run create, got %d", len(creates))
	}
	pod := creates[0]
	if pod.GetName() != "" || pod.GetGenerateName() != "a-pod" {
		t.Errorf("name %q, generateName %q; want a name generated from a-pod", pod.GetName(), pod.GetGenerateName())
	}
	image, _, _ := unstructured.NestedSlice(pod.Object, "spec", "containers")
	if got := fmt.Sprint(image); !strings.Contains(got, "image:nginx:2") {
		t.Errorf("the dry run is not the new Pod: containers %s", got)
	}
}

func TestRunFailsWhenTheClusterCannotBeRead(t *testing.T) {
	cat := catalog(t)
	cluster := newFakeCluster(nil)
	cluster.PrependReactor("list", "myapps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(myAppsGVR.GroupResource(), "", errors.New("no"))
	})
	_, err := Run(context.Background(), Input{Candidate: compile(t, gadget, cat), Mapper: cat, Client: cluster})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "list myapps.demo.rtfm.co.ua") {
		t.Errorf("want the list's Forbidden error, naming the resource; got %v", err)
	}
}

// A policy whose children's namespaces must consent (confinement's consentLabel) reads the
// Namespaces' labels, related entries or none, as the runtime does: without them, plan called
// every parent failing (NamespaceNotAllowed) where the runtime syncs it.
func TestAPlanReadsTheConsentOfNamespacesWithoutRelatedEntries(t *testing.T) {
	cat := catalog(t)
	candidate := edit(t, `metadata: {name: "${parent.metadata.name}-config"}`, `metadata: {name: "${parent.metadata.name}-config", namespace: shared}`,
		"    - id: config\n", "    - id: config\n      crossNamespace: true\n",
		"  children:\n", "  confinement:\n    childNamespaces: {consentLabel: example.com/gadgets}\n  children:\n")
	shared := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "shared", "labels": map[string]any{"example.com/gadgets": "true"}}}}
	cluster := newFakeCluster([]runtime.Object{myApp("a", "nginx"), shared})
	p, err := Run(t.Context(), Input{Candidate: compile(t, candidate, cat), Mapper: cat, Client: cluster})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(p); p.Totals.Failing != 0 || !slices.Contains(got, "a: create v1 ConfigMap shared/a-config") {
		t.Errorf("plan:\n  %s\nwant shared/a-config created and no parent failing", strings.Join(got, "\n  "))
	}
}

// An object the candidate leaves alone though it carries the parent's labels (out of reach of its
// confinement, not in its record) is not deleted: the runtime only reports it. plan said "delete".
func TestAnObjectLeftAloneIsNoDeletion(t *testing.T) {
	cm := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": "other"}}}
	}
	cand := &preview.Result{Observed: &render.ObservedChildren{Foreign: []render.ForeignObject{
		{Object: cm("out-of-reach"), Reason: contract.ReasonChildOutOfReach, Why: "namespace other is out of reach"},
		{Object: cm("of-a-dropped-resource")},
	}}}
	cat := catalog(t)
	var got []string
	for _, ch := range childChanges(Input{Candidate: compile(t, gadget, cat), Mapper: cat}, cand, nil) {
		got = append(got, string(ch.Action)+" "+ch.Name)
	}
	if want := []string{"delete of-a-dropped-resource"}; !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
}

// TestADeletionHeldBackByOrderIsPlanned: children no longer desired are deleted in the reverse of
// their order, which the version that desired them declares (the running one): the Pod that
// depends on the ConfigMap goes first, and the ConfigMap's deletion waits for it. The plan lists
// both deletions, the held one saying what it waits for, as the runtime decides them.
func TestADeletionHeldBackByOrderIsPlanned(t *testing.T) {
	cat := catalog(t)
	running := compile(t, edit(t, "    - id: pod\n", "    - id: pod\n      dependsOn: [config]\n"), cat)
	head, _, found := strings.Cut(gadget, "  children:\n")
	if !found {
		t.Fatal("the gadget policy has no children")
	}
	candidate := compile(t, head+`  children:
    - id: other
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}-other"}
        data: {a: b}
`, cat)
	parent := myApp("a", "nginx")
	children := applied(t, compile(t, gadget, cat), cat, parent) // both, as the running version leaves them once the ConfigMap is ready
	recordChildren(parent, children)
	p, err := Run(t.Context(), Input{Candidate: candidate, Running: running, Mapper: cat, Client: newFakeCluster(append(children, parent))})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range p.Parents[0].Children {
		got = append(got, c.String()+": "+c.Why)
	}
	want := []string{
		"create v1 ConfigMap default/a-other: a new child",
		"delete v1 ConfigMap default/a-config: no longer desired; deleted once Pod default/a-pod is gone…",
		"delete v1 Pod default/a-pod: no longer desired",
	}
	if !matches(got, want) {
		t.Errorf("changes:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if p.Totals.Deleted != 2 {
		t.Errorf("totals %+v, want 2 deleted", p.Totals)
	}
}
