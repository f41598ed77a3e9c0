package expr

import (
	"maps"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
)

// Refs are what expressions name of the observed children and of the variables: what orders a
// policy's children (a child whose template reads children.db is applied after db exists, and
// after db is ready when it reads db's status). Recorded at compile from the checked expression.
type Refs struct {
	// Children maps each child id read by name to whether it may read what the child's
	// controller writes: its status, or the child whole (passed on, iterated over).
	Children map[string]bool
	// AllChildren: children is read otherwise than by selecting an id by name.
	AllChildren bool
	// Variables are the variables read by name.
	Variables map[string]bool
	// AllVariables: variables is read otherwise than by selecting a name.
	AllVariables bool
	// Parent are the paths of the parent's fields read by name (spec.size: parent.spec.size);
	// a path covers the fields below it. WholeParent: the parent is read otherwise (passed whole,
	// indexed by a computed key).
	Parent      map[string]bool
	WholeParent bool
}

// Add adds o's references to r.
func (r *Refs) Add(o Refs) {
	for id, status := range o.Children {
		r.readChild(id, status)
	}
	r.AllChildren = r.AllChildren || o.AllChildren
	for name := range o.Variables {
		r.readVariable(name)
	}
	r.AllVariables = r.AllVariables || o.AllVariables
	for path := range o.Parent {
		r.readParent(path)
	}
	r.WholeParent = r.WholeParent || o.WholeParent
}

func (r *Refs) readParent(path string) {
	if r.Parent == nil {
		r.Parent = map[string]bool{}
	}
	r.Parent[path] = true
}

// ReadsParentField reports whether the expressions may read the parent's field at path (e.g.
// spec.replicas): they read it, a field above it, or the parent whole.
func (r Refs) ReadsParentField(path string) bool {
	if r.WholeParent {
		return true
	}
	for p := path; ; {
		if r.Parent[p] {
			return true
		}
		cut := strings.LastIndexByte(p, '.')
		if cut < 0 {
			return false
		}
		p = p[:cut]
	}
}

func (r *Refs) readChild(id string, status bool) {
	if r.Children == nil {
		r.Children = map[string]bool{}
	}
	r.Children[id] = r.Children[id] || status
}

func (r *Refs) readVariable(name string) {
	if r.Variables == nil {
		r.Variables = map[string]bool{}
	}
	r.Variables[name] = true
}

// Refs returns what the program names of the children and the variables.
func (p *Program) Refs() Refs {
	if p == nil {
		return Refs{}
	}
	return p.refs.clone()
}

// Refs returns what the template's expressions name of the children and the variables.
func (t *Template) Refs() Refs {
	var out Refs
	if t != nil {
		addNodeRefs(&out, t.root)
	}
	return out
}

func addNodeRefs(out *Refs, n tnode) {
	switch x := n.(type) {
	case exprNode:
		out.Add(x.p.refs)
	case interpNode:
		for _, p := range x {
			if p.prg != nil {
				out.Add(p.prg.refs)
			}
		}
	case mapNode:
		for _, v := range x.vals {
			addNodeRefs(out, v)
		}
	case listNode:
		for _, v := range x {
			addNodeRefs(out, v)
		}
	}
}

func (r Refs) clone() Refs {
	return Refs{Children: maps.Clone(r.Children), AllChildren: r.AllChildren, Variables: maps.Clone(r.Variables), AllVariables: r.AllVariables,
		Parent: maps.Clone(r.Parent), WholeParent: r.WholeParent}
}

// refsOf finds what a checked expression names of children and variables.
func refsOf(checked *cel.Ast) Refs {
	var out Refs
	for _, e := range uses(checked, "children") {
		id, member, ok := namedMember(e)
		if !ok {
			out.AllChildren = true
			continue
		}
		out.readChild(id, readsBeyondSpec(member))
	}
	for _, e := range uses(checked, "variables") {
		name, _, ok := namedMember(e)
		if !ok {
			out.AllVariables = true
			continue
		}
		out.readVariable(name)
	}
	for _, e := range uses(checked, "parent") {
		path := selectedPath(e)
		if path == "" {
			out.WholeParent = true
			continue
		}
		out.readParent(path)
	}
	return out
}

// selectedPath returns the path of field names that selects from a use of a variable
// (parent.spec.size: spec.size), as far as fields are selected by name; "" when none is.
func selectedPath(e ast.NavigableExpr) string {
	return strings.Join(selectedNames(e), ".")
}

// selectedNames returns the field names that select from a use of a variable, in order
// (parent.spec.size: spec, size; data['tls.crt']: data, tls.crt), as far as fields are selected
// by name; none when none is.
func selectedNames(e ast.NavigableExpr) []string {
	var names []string
	for {
		name, member, ok := namedMember(e)
		if !ok {
			return names
		}
		names = append(names, name)
		e = member
	}
}

// namedMember returns the name a use of a map variable selects (v.name, v.?name, v['name'],
// v[?'name']) and the expression that selects it.
func namedMember(e ast.NavigableExpr) (string, ast.NavigableExpr, bool) {
	p, ok := e.Parent()
	if !ok {
		return "", nil, false
	}
	switch p.Kind() {
	case ast.SelectKind:
		return p.AsSelect().FieldName(), p, true
	case ast.CallKind:
		call := p.AsCall()
		switch call.FunctionName() {
		case "_?._", "_[_]", "_[?_]":
			args := call.Args()
			if len(args) == 2 && args[0].ID() == e.ID() && args[1].Kind() == ast.LiteralKind {
				if s, ok := args[1].AsLiteral().(types.String); ok {
					return string(s), p, true
				}
			}
		}
	}
	return "", nil, false
}

// readsBeyondSpec reports whether what selects a child (children.db) goes on to read what its
// controller writes: its status, or the child whole.
func readsBeyondSpec(member ast.NavigableExpr) bool {
	if member.Kind() == ast.SelectKind && member.AsSelect().IsTestOnly() {
		return false // has(children.db): whether it exists
	}
	if p, ok := member.Parent(); ok && p.Kind() == ast.CallKind && p.AsCall().FunctionName() == "hasValue" {
		return false // children.?db.hasValue()
	}
	field, _, ok := namedMember(member)
	return !ok || field == "status"
}
