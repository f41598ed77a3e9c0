package preview

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/render"
)

// Input is what one offline sync reads. Nothing in it is modified.
type Input struct {
	Policy *policy.Compiled
	// Previous is the version Policy replaces (nil: none), as the runtime knows it while one
	// replaces the other: its entries say the deletion policy and order of the children Policy no
	// longer lists (decide.Writes).
	Previous *policy.Compiled
	// Parent is the parent as written: Run admits a copy of it.
	Parent *unstructured.Unstructured
	// Related are the objects the policy's related entries may read, and Namespaces, whose labels
	// are the consent of the policy's confinement.
	Related []*unstructured.Unstructured
	// Observed are the objects that exist as the parent's children (with their status, say).
	Observed []*unstructured.Unstructured
	// Mapper knows the kinds, and the CRDs' schemas.
	Mapper kinds.Mapper
	// ReservedNamespace is the runtime's policy namespace, which never holds a child ("": none;
	// render.Input.ReservedNamespace).
	ReservedNamespace string
	// CheckRecord: Observed comes from the cluster, and the parent's record of its children
	// decides which are its own (render.Input.CheckRecord); false for files.
	CheckRecord bool
	// Whole renders with the observed children whole; by default they are rendered as the
	// runtime's caches keep them (policy.Compiled.Kept), so that offline reads what the runtime
	// reads.
	Whole bool
}

// Result is what one offline sync computes.
type Result struct {
	// Parent is the parent as admitted (defaulted, with a UID), with the status the sync writes.
	Parent *unstructured.Unstructured
	// Output holds the desired children.
	Output *render.Output
	// Observed are the given objects as the sync sorts them.
	Observed *render.ObservedChildren
	// Steps are what the sync writes (decide.Writes), and Changes what it does to observed
	// objects besides applying the desired children.
	Steps   []decide.Step
	Changes []Change
	// Notes say what was assumed or left out: a UID given to the parent, objects ignored.
	Notes []string
}

// Run admits the parent, reads its related objects, renders it with its observed children,
// decides what the sync writes (package decide, as the runtime does), in as many waves as the
// runtime's sync (decide.RenderAgain), computes the status with the children as those writes
// leave them (decide.Written: what the API server would return) and checks it, and lists the
// changes to observed objects. A parent the API
// server would refuse is an *InvalidError; a status the CRD cannot store is a policy.ErrorList
// naming the policy's status field; a failed render is a *render.Error, as the parent's Synced
// condition would report it, and the Result then holds only the parent with the status the
// runtime writes on a failure (Synced and Ready False, the policy's fields as they were).
func Run(ctx context.Context, in Input) (*Result, error) {
	c := in.Policy
	schema, err := newSchema(c.Parent)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	parent, err := admitParent(ctx, c, schema, in.Parent, &res.Notes)
	if err != nil {
		return nil, err
	}
	rin := render.Input{Parent: parent, Mapper: in.Mapper, Budget: expr.NewBudget(), ReservedNamespace: in.ReservedNamespace, CheckRecord: in.CheckRecord}
	rin.Related, rin.Namespaces, err = related(ctx, c, parent, in.Related, in.Mapper, rin.Budget)
	if err != nil {
		return failed(parent, res, err)
	}
	observed := in.Observed
	if !in.Whole {
		observed = c.Kept(observed)
	}
	out, kids, last, err := waves(ctx, c, in.Previous, rin, observed, res)
	if err != nil {
		return failed(parent, res, err)
	}
	res.Changes = changesOf(res.Steps)
	res.Notes = append(res.Notes, ignored(res.Changes, kids.Foreign)...)
	after, _ := decide.AfterWrites(ctx, c, rin, out, kids.ByID, last)
	if res.Parent, err = withStatus(ctx, c, schema, parent, after); err != nil {
		return nil, err
	}
	return res, nil
}

// waves renders and decides a sync's writes in waves, as the runtime's sync does
// (decide.RenderAgain), each rendering with the children as the last left them. It adds the
// steps of every wave to res, with their notes, and the last render (Output, Observed), and returns it, its observed
// children and the children its wave wrote. A failed render of a later wave ends the waves, as in
// the runtime: what the waves before it wrote stands.
func waves(ctx context.Context, c *policy.Compiled, previous *policy.Compiled, rin render.Input, observed []*unstructured.Unstructured, res *Result) (out *render.Output, kids *render.ObservedChildren, last []*unstructured.Unstructured, err error) {
	for wave := 0; ; wave++ {
		o, k, err := render.RenderObserved(ctx, c, rin, observed)
		if err != nil {
			if wave == 0 {
				return nil, nil, nil, err
			}
			return out, kids, last, nil
		}
		out, kids = o, k
		res.Output, res.Observed = o, k // a refused step still shows what was rendered
		steps, notes := withoutHandWritten(decide.Writes(o, k, c, previous))
		if err := decide.Refusal(steps); err != nil {
			return nil, nil, nil, err
		}
		res.Steps = appendNew(res.Steps, steps)
		for _, n := range notes {
			if !slices.Contains(res.Notes, n) {
				res.Notes = append(res.Notes, n)
			}
		}
		w := decide.WaveOf(steps)
		last = w.Written
		if !decide.RenderAgain(c, rin.Parent, o, wave, w) {
			return out, kids, last, nil
		}
		observed = decide.ObjectsAfter(observed, w.Written)
	}
}

// appendNew appends to steps those of a later wave that are news: every write, and the other
// steps (a deletion that waits for another, say) the waves before did not list already.
func appendNew(steps, later []decide.Step) []decide.Step {
	listed := map[string]bool{}
	for _, s := range steps {
		listed[stepKey(s)] = true
	}
	for _, s := range later {
		if !listed[stepKey(s)] {
			steps = append(steps, s)
		}
	}
	return steps
}

// stepKey names a step by its action and its object's identity.
func stepKey(s decide.Step) string {
	obj := s.Observed
	if s.Child != nil {
		obj = s.Child.Object
	}
	return fmt.Sprint(s.Action) + " " + render.Identity(obj)
}

// failed is the result of a failed render: the parent with the status the runtime writes then.
func failed(parent *unstructured.Unstructured, res *Result, err error) (*Result, error) {
	var re *render.Error
	if !errors.As(err, &re) {
		return nil, err
	}
	status, serr := render.NewStatus(parent, nil, render.ErrorConditions(err, contract.ReasonEvaluationError), nil)
	if serr != nil {
		return nil, errors.Join(err, serr)
	}
	res.Parent = parent.DeepCopy()
	res.Parent.Object["status"] = status
	return res, err
}

// AdmitParent returns the parent as the API server would admit its create, checked against the
// policy's parent schema (its CRD, or the schema the policy declares) as Run admits it: an
// *InvalidError names each field refused. It is returned as given, completed, when the schema
// is unknown (c.Parent.Schema nil). `metacel validate` checks the samples of a folder with it.
func AdmitParent(ctx context.Context, c *policy.Compiled, parent *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	schema, err := newSchema(c.Parent)
	if err != nil {
		return nil, err
	}
	var notes []string
	return admitParent(ctx, c, schema, parent, &notes)
}

// admitParent completes and admits a copy of the parent: namespace "default" when the resource is
// namespaced and it has none (as kubectl places it), a UID and generation when it has none, then
// the API server's checks and defaults of its CRD.
func admitParent(ctx context.Context, c *policy.Compiled, schema *crdSchema, p *unstructured.Unstructured, notes *[]string) (*unstructured.Unstructured, error) {
	parent := p.DeepCopy()
	if parent.GetNamespace() == "" && c.Parent.Namespaced {
		parent.SetNamespace("default")
	}
	if note := completeMetadata(parent); note != "" {
		*notes = append(*notes, note)
	}
	if schema == nil {
		return parent, nil
	}
	return schema.admit(ctx, parent)
}

// related gives each related entry the objects it reads among objs, and the labels of the
// Namespaces among them, after checking, as the runtime does, that the parent may read where its
// entries read.
func related(ctx context.Context, c *policy.Compiled, parent *unstructured.Unstructured, objs []*unstructured.Unstructured, m kinds.Mapper, budget *expr.Budget) (map[string][]*unstructured.Unstructured, render.NamespaceLabels, error) {
	namespaces := map[string]map[string]string{}
	for _, obj := range objs {
		if obj.GetAPIVersion() == "v1" && obj.GetKind() == "Namespace" {
			namespaces[obj.GetName()] = obj.GetLabels()
		}
	}
	labels := func(name string) (map[string]string, bool) {
		l, ok := namespaces[name]
		return l, ok
	}
	refs, err := render.RelatedInReach(ctx, c, parent, labels, budget)
	if err != nil {
		return nil, nil, err
	}
	out := map[string][]*unstructured.Unstructured{}
	for _, obj := range objs {
		gvr := kinds.LookupKind(m, obj.GroupVersionKind()).GVR
		for _, ref := range refs {
			if ref.Resource == gvr && ref.Matches(obj) {
				out[ref.ID] = append(out[ref.ID], obj)
			}
		}
	}
	return out, labels, nil
}

// withStatus returns the parent with the status the sync writes, checked against its CRD's status
// schema as the API server checks a status write.
func withStatus(ctx context.Context, c *policy.Compiled, schema *crdSchema, parent *unstructured.Unstructured, out *render.Output) (*unstructured.Unstructured, error) {
	status, err := render.NewStatus(parent, out.Status, out.Conditions(), nil)
	if err != nil {
		return nil, err
	}
	p := parent.DeepCopy()
	p.Object["status"] = status
	if schema == nil || !c.Parent.HasStatus {
		return p, nil
	}
	if err := schema.checkStatus(ctx, timed(p)); err != nil {
		return nil, statusErrors(c, err)
	}
	return p, nil
}

// timed is the parent as the runtime writes it: every condition has a lastTransitionTime (offline,
// only an unchanged condition keeps one), which a CRD may require.
func timed(parent *unstructured.Unstructured) *unstructured.Unstructured {
	p := parent.DeepCopy()
	conds, _, _ := unstructured.NestedSlice(p.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["lastTransitionTime"] == nil {
			m["lastTransitionTime"] = "2006-01-02T15:04:05Z"
		}
	}
	if conds != nil {
		_ = unstructured.SetNestedSlice(p.Object, conds, "status", "conditions")
	}
	return p
}

// statusErrors locates the fields of a status the CRD refuses in the policy: status.x is the
// policy's spec.status.x.
func statusErrors(c *policy.Compiled, err error) error {
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		return err
	}
	const fix = "make the expression give what the schema says, or change the CRD's status schema"
	var list policy.ErrorList
	for _, p := range invalid.Unknown {
		list = append(list, c.Source.Errorf("spec."+p, "the computed %s is not in the CRD's status schema, the API server would drop it: %s", p, fix))
	}
	for _, fe := range invalid.Errs {
		list = append(list, c.Source.Errorf("spec."+fe.Field, "the computed %s does not fit the CRD's status schema, the API server would refuse the status write: %s: %s", fe.Field, fe.ErrorBody(), fix))
	}
	return list
}

// ignored notes the foreign objects that are no conflict: given, but not the parent's children.
func ignored(changes []Change, foreign []render.ForeignObject) []string {
	conflict := map[*unstructured.Unstructured]bool{}
	for _, ch := range changes {
		if ch.Action == decide.Conflict {
			conflict[ch.Object] = true
		}
	}
	var notes []string
	for _, f := range foreign {
		if !conflict[f.Object] {
			notes = append(notes, fmt.Sprintf("ignored observed %s %s: not a child of this parent: %s", f.Object.GetKind(), render.NamespacedName(f.Object), f.Why))
		}
	}
	return notes
}

// ErrorText is an error of Run as `metacel render` and `metacel test` show it: a render error
// prefixed with the reason the parent's Synced condition would show.
func ErrorText(err error) string {
	var re *render.Error
	if errors.As(err, &re) {
		return render.ErrorConditions(err, contract.ReasonEvaluationError)[0].Reason + ": " + err.Error()
	}
	return err.Error()
}
