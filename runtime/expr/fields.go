package expr

import (
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"

	"metacel.dev/metacel/runtime/projection"
)

// Fields returns the fields the template sets, as a cache must keep them to compare what is with
// what the template gives: each literal key, and whole whatever a ${} expression or a literal
// value gives. A list applies its items' fields to every item (package projection).
func (t *Template) Fields() *projection.Fields {
	f := &projection.Fields{}
	if t != nil {
		addNodeFields(f, nil, t.root)
	}
	return f
}

func addNodeFields(f *projection.Fields, path []string, n tnode) {
	switch x := n.(type) {
	case mapNode:
		if len(x.keys) == 0 {
			f.Keep(path...)
		}
		for i, k := range x.keys {
			addNodeFields(f, append(slices.Clip(path), k), x.vals[i])
		}
	case listNode:
		if len(x) == 0 {
			f.Keep(path...)
		}
		for _, item := range x {
			addNodeFields(f, path, item)
		}
	default: // an expression, an interpolated string, a literal
		f.Keep(path...)
	}
}

// childReads are the fields of the observed children that expressions read (Reads.ChildFields).
type childReads struct {
	mu sync.Mutex
	// byID are the fields read of children.<id>; all: children is read otherwise than by id
	byID map[string]*projection.Fields
	all  bool
	// own are the fields read of a readyWhen's child
	own *projection.Fields
}

// record notes the fields of children.<id> and of child that an expression reads: each path
// selected by name from them (children.db.status.phase: status.phase of db), whole where a use
// selects no field by name.
func (r *childReads) record(checked *cel.Ast) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range uses(checked, "children") {
		id, member, ok := namedMember(e)
		if !ok {
			r.all = true
			continue
		}
		if r.byID == nil {
			r.byID = map[string]*projection.Fields{}
		}
		if r.byID[id] == nil {
			r.byID[id] = &projection.Fields{}
		}
		if !testsPresence(member) {
			keepSelected(r.byID[id], member)
		}
	}
	for _, e := range uses(checked, "child") {
		if r.own == nil {
			r.own = &projection.Fields{}
		}
		keepSelected(r.own, e)
	}
}

// testsPresence reports whether what selects a child (children.db) only asks whether it exists:
// has(children.db), children.?db.hasValue().
func testsPresence(member ast.NavigableExpr) bool {
	if member.Kind() == ast.SelectKind && member.AsSelect().IsTestOnly() {
		return true
	}
	p, ok := member.Parent()
	return ok && p.Kind() == ast.CallKind && p.AsCall().FunctionName() == "hasValue"
}

// keepSelected keeps in f the path selected by name from a use of an object, all of it when none
// is. A test of presence, has(x.a.b), reads whether b is there, and so keeps b. A name with a dot
// (data['tls.crt']) is one field, not a path.
func keepSelected(f *projection.Fields, use ast.NavigableExpr) {
	f.Keep(selectedNames(use)...)
}

// ChildFields returns the fields of the children of an id that the expressions compiled so far
// read; nil (all) when an expression reads children otherwise than by id.
func (r *Reads) ChildFields(id string) *projection.Fields {
	if r == nil {
		return nil
	}
	r.childReads.mu.Lock()
	defer r.childReads.mu.Unlock()
	if r.childReads.all {
		return nil
	}
	return (&projection.Fields{}).Add(orEmpty(r.childReads.byID[id]))
}

// ReadyWhenFields returns the fields of a child that the readyWhen expressions compiled so far
// read.
func (r *Reads) ReadyWhenFields() *projection.Fields {
	if r == nil {
		return nil
	}
	r.childReads.mu.Lock()
	defer r.childReads.mu.Unlock()
	return (&projection.Fields{}).Add(orEmpty(r.childReads.own))
}

func orEmpty(f *projection.Fields) *projection.Fields {
	if f == nil {
		return &projection.Fields{}
	}
	return f
}
