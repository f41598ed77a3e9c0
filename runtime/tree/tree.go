package tree

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/policystatus"
	"metacel.dev/metacel/runtime/preview"
	"metacel.dev/metacel/runtime/render"
	"metacel.dev/metacel/runtime/rollout"
)

// Input is the parent to show and how to read the cluster.
type Input struct {
	// Policy is the version of the policy that runs, and Source where it was loaded from.
	Policy *policy.Compiled
	Source string
	// Parent is the parent as the API server holds it.
	Parent *unstructured.Unstructured
	// Client reads the children and related objects, Kube the parent's events.
	Client dynamic.Interface
	Kube   kubernetes.Interface
	Mapper kinds.Mapper
	// ReservedNamespace is the policy namespace, which never holds a child.
	ReservedNamespace string
	// Depth is how many levels of children's own trees to show beneath the parent: a child that
	// is the parent of a running policy of ReservedNamespace gets its tree (0: none; at most
	// MaxDepth).
	Depth int
}

// Tree is one parent, its children and its related objects.
type Tree struct {
	Parent     Object      `json:"parent"`
	Policy     string      `json:"policy"`
	Version    string      `json:"version"`
	Source     string      `json:"source,omitempty"`
	Conditions []Condition `json:"conditions"`
	// Ready is the parent's Ready condition: True.
	Ready bool `json:"ready"`
	// Error is why the policy cannot render the parent now, as a sync would report it.
	Error    string  `json:"error,omitempty"`
	Children []Child `json:"children"`
	// Waiting are the child entries a sync would not evaluate yet, each with what it waits for
	// (another child that does not exist yet, or is not ready).
	Waiting []Waiting `json:"waiting,omitempty"`
	Related []Related `json:"related,omitempty"`
}

// Waiting is a child entry that waits for another child.
type Waiting struct {
	ID  string `json:"id"`
	Why string `json:"why"`
}

// Object names an object.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Condition is one condition of the parent's status.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Child is one child the parent should have.
type Child struct {
	ID string `json:"id"`
	Object
	// Exists says the API server holds it; Deleting that it is being deleted.
	Exists   bool `json:"exists"`
	Deleting bool `json:"deleting,omitempty"`
	Ready    bool `json:"ready"`
	// NotReady says why it is not ready: missing, or the readyWhen that is not true yet.
	NotReady string `json:"notReady,omitempty"`
	// Next is what the next sync would do to it ("" when it is up to date), and why; for a
	// parent being deleted, what its finalizer does (children go in the reverse of the order
	// they are applied in).
	Next string `json:"next,omitempty"`
	// HoldsUp names the children whose deletion waits for this one, being deleted, to be gone.
	HoldsUp []string `json:"holdsUp,omitempty"`
	// LastError is the last Warning event about it on the parent: its reason and note.
	LastError string `json:"lastError,omitempty"`
	// Tree is the child's own tree, when it is the parent of a running policy and the depth
	// asked reaches it; ShownAbove says it is a parent shown above it, whose tree is not repeated.
	Tree       *Tree `json:"tree,omitempty"`
	ShownAbove bool  `json:"shownAbove,omitempty"`
}

// Related is one object, or list, the parent reads.
type Related struct {
	ID string `json:"id"`
	Object
	Selector string `json:"selector,omitempty"`
	// Found is how many objects the API server holds for it; Error why it could not be read.
	Found int    `json:"found"`
	Error string `json:"error,omitempty"`
}

// Build reads a parent's children, related objects and events, and syncs it offline as the
// runtime would (package preview) to say what each child is; then, in.Depth levels down, the
// same of each child that is the parent of a running policy.
func Build(ctx context.Context, in Input) (*Tree, error) {
	in.Depth = min(max(in.Depth, 0), MaxDepth)
	t, observed, err := buildOne(ctx, in)
	if err != nil || in.Depth == 0 || in.Kube == nil {
		return t, err
	}
	n, err := newNesting(ctx, in)
	if err != nil {
		return nil, err
	}
	n.nest(ctx, in, t, observed, nil)
	return t, nil
}

// buildOne is one parent's tree, without its children's own; observed are its children as the
// API server holds them, one for each of t.Children (nil for a missing one).
func buildOne(ctx context.Context, in Input) (*Tree, []*unstructured.Unstructured, error) {
	t := &Tree{
		Parent: objectOf(in.Parent), Policy: in.Policy.Name(), Source: in.Source,
		Version: policystatus.ShortVersion(rollout.Version(in.Policy)), Conditions: conditionsOf(in.Parent),
	}
	t.Ready = conditionIs(t.Conditions, contract.ConditionReady, "True")
	observed, err := readChildren(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	related, refs := readRelated(ctx, in)
	t.Related = refs
	related = append(related, readNamespaces(ctx, in)...)
	res, err := preview.Run(ctx, preview.Input{Policy: in.Policy, Parent: in.Parent, Related: related, Observed: observed,
		Mapper: in.Mapper, ReservedNamespace: in.ReservedNamespace, CheckRecord: true})
	if err != nil {
		t.Error = err.Error()
	}
	var held []*unstructured.Unstructured
	if res != nil && res.Output != nil {
		t.Children, held = childrenOf(res)
		for _, h := range res.Output.Held {
			t.Waiting = append(t.Waiting, Waiting{ID: h.ID, Why: h.Why})
		}
		steps := res.Steps
		if in.Parent.GetDeletionTimestamp() != nil {
			steps = decide.Removals(observed, nil, in.Policy) // what the finalizer does, not a sync
			for i := range t.Children {
				t.Children[i].Next = removalStep(steps, held[i])
			}
		}
		markHoldUps(t.Children, held, steps)
	}
	addLastErrors(ctx, in, t.Children)
	return t, held, nil
}

// readChildren lists the objects of each child resource that carry the parent's labels and that
// metacel applied, as the runtime's caches keep them (and plan reads them): an object someone
// else made with the labels is no child, but the name a child would take.
func readChildren(ctx context.Context, in Input) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for gvr := range in.Policy.ChildResources {
		list, err := clusterread.ListChildren(ctx, in.Client, gvr, in.Policy.Name(), in.Parent.GetUID())
		if err != nil {
			return nil, fmt.Errorf("list the %s of %s: %w", gvr.Resource, objectOf(in.Parent), err)
		}
		for _, obj := range list {
			if obj.GetLabels()[contract.LabelManagedBy] == contract.ManagedByValue && apply.AppliedBy(obj) {
				out = append(out, obj)
			}
		}
	}
	return out, nil
}

// readNamespaces reads the Namespaces, whose consent labels the policy's confinement reads (none
// when it reads none), as the runtime watches them: without them every namespace that consented
// would look as though it had not. One that cannot be read reads none: the render says which
// namespace did not consent.
func readNamespaces(ctx context.Context, in Input) []*unstructured.Unstructured {
	if len(in.Policy.Confinement.ConsentLabels()) == 0 {
		return nil
	}
	list, err := clusterread.List(ctx, in.Client, schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "")
	if err != nil {
		return nil
	}
	return list
}

// readRelated reads the objects the parent's related entries name now; an entry that does not
// resolve, or cannot be read, is shown with why.
func readRelated(ctx context.Context, in Input) ([]*unstructured.Unstructured, []Related) {
	if len(in.Policy.Related) == 0 {
		return nil, nil
	}
	refs, err := render.Related(ctx, in.Policy, in.Parent, nil)
	if err != nil {
		return nil, []Related{{ID: "*", Error: err.Error()}}
	}
	var objs []*unstructured.Unstructured
	var out []Related
	for _, ref := range refs {
		got, err := clusterread.ReadRelated(ctx, in.Client, ref)
		r := Related{ID: ref.ID, Object: Object{APIVersion: ref.Resource.GroupVersion().String(), Kind: ref.Resource.Resource, Namespace: ref.Namespace, Name: ref.Name}, Found: len(got)}
		if ref.Selector != nil {
			r.Selector = ref.Selector.String()
		}
		if err != nil {
			r.Error = err.Error()
		}
		out = append(out, r)
		objs = append(objs, got...)
	}
	return objs, out
}

// childrenOf says what each desired child of an offline sync is; held are the children as the
// API server holds them, one for each (nil for a missing one). Why a child is not ready is the
// render's own word (render.Child.NotReadyBecause).
func childrenOf(res *preview.Result) (out []Child, held []*unstructured.Unstructured) {
	for i := range res.Output.Children {
		ch := &res.Output.Children[i]
		child := Child{ID: ch.ID, Object: objectOf(ch.Object), Ready: ch.Ready, NotReady: ch.NotReadyBecause}
		obs := render.FindSame(res.Observed.ByID[ch.ID], ch.Object)
		if obs != nil {
			child.Exists, child.Deleting = true, obs.GetDeletionTimestamp() != nil
			child.UID = string(obs.GetUID())
		}
		child.Next = nextStep(res.Steps, ch)
		out, held = append(out, child), append(held, obs)
	}
	return out, held
}

// removalStep says what a deleted parent's finalizer does to a child observed as obs, and why;
// "" when nothing (missing, or already being deleted).
func removalStep(steps []decide.Step, obs *unstructured.Unstructured) string {
	for _, s := range steps {
		if obs != nil && s.Observed.GetUID() == obs.GetUID() {
			return string(s.Action) + ": " + s.Why
		}
	}
	return ""
}

// markHoldUps names, on each child being deleted, the children whose deletion waits for it
// (decide.Wait steps), and says so in what the next sync does (nothing but wait for it).
func markHoldUps(children []Child, observed []*unstructured.Unstructured, steps []decide.Step) {
	for i, obs := range observed {
		if obs == nil || obs.GetDeletionTimestamp() == nil {
			continue
		}
		for _, s := range steps {
			if s.Action == decide.Wait && s.Blocker.GetUID() == obs.GetUID() {
				children[i].HoldsUp = append(children[i].HoldsUp, objectOf(s.Observed).String())
			}
		}
		if len(children[i].HoldsUp) > 0 && children[i].Next == "" {
			children[i].Next = fmt.Sprintf("wait: being deleted since %s; the deletion of %s waits until it is gone",
				obs.GetDeletionTimestamp().UTC().Format(time.RFC3339), strings.Join(children[i].HoldsUp, ", "))
		}
	}
}

// nextStep says what the next sync would do to a desired child, and why; "" when nothing.
func nextStep(steps []decide.Step, ch *render.Child) string {
	for _, s := range steps {
		if s.Child == nil || render.Identity(s.Child.Object) != render.Identity(ch.Object) {
			continue
		}
		if s.Why != "" {
			return string(s.Action) + ": " + s.Why
		}
		return string(s.Action)
	}
	return ""
}

// addLastErrors gives each child the last Warning event about it on the parent.
func addLastErrors(ctx context.Context, in Input, children []Child) {
	if in.Kube == nil || len(children) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
	defer cancel()
	list, err := in.Kube.EventsV1().Events(in.Parent.GetNamespace()).List(ctx, metav1.ListOptions{
		FieldSelector: "regarding.uid=" + string(in.Parent.GetUID()) + ",type=Warning"})
	if err != nil {
		return // events are a help; the conditions say the rest
	}
	events := list.Items
	slices.SortFunc(events, func(a, b eventsv1.Event) int { return lastSeen(a).Compare(lastSeen(b)) }) // oldest first: the last one wins
	for i := range children {
		for _, e := range events {
			if about(e, children[i]) {
				children[i].LastError = e.Reason + ": " + e.Note
			}
		}
	}
}

// about reports whether an event is about a child: it names the child as its related object, or,
// for a failed sync (whose event relates to no object), its note names the child.
func about(e eventsv1.Event, c Child) bool {
	if e.Related != nil {
		return e.Related.Kind == c.Kind && e.Related.Namespace == c.Namespace && e.Related.Name == c.Name
	}
	return strings.Contains(e.Note, c.Kind+" "+namespaced(c.Object)+":")
}

// lastSeen is when an event (or its series) was last seen.
func lastSeen(e eventsv1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.DeprecatedLastTimestamp.Time
}

func objectOf(o *unstructured.Unstructured) Object {
	return Object{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName(), UID: string(o.GetUID())}
}

func namespaced(o Object) string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// conditionsOf reads the conditions of an object's status.
func conditionsOf(o *unstructured.Unstructured) []Condition {
	raw, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	var out []Condition
	for _, r := range raw {
		m, _ := r.(map[string]any)
		str := func(k string) string { s, _ := m[k].(string); return s }
		out = append(out, Condition{Type: str("type"), Status: str("status"), Reason: str("reason"), Message: str("message")})
	}
	return out
}

func conditionIs(conds []Condition, typ, status string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == status
		}
	}
	return false
}
