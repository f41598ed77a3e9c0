package policy

import (
	"fmt"
	"slices"
	"strings"

	"metacel.dev/metacel/runtime/expr"
)

// Dependency is a child another waits for: until it exists, or, when Ready, until it is ready.
// Named: only a dependsOn names it (no expression reads its status).
type Dependency struct {
	ID    string
	Ready bool
	Named bool
	// Why says what makes the dependency: "it reads children.db", "it reads children.db's
	// status", "its dependsOn names db".
	Why string
}

// order finds what each child waits for, from the children its includeWhen, forEach, template or
// expression read (directly, or through the variables they read) and from its dependsOn, and
// returns the order the children are applied in: each after what it waits for, the others as
// listed. A cycle is a load error naming the ids. Reading children whole (not by id) orders
// nothing.
func (c *compiler) order(children []CompiledChild, variables []CompiledVariable) []int {
	index := make(map[string]int, len(children))
	for i := range children {
		index[children[i].ID] = i
	}
	varRefs := variableRefs(variables)
	for i := range children {
		children[i].After = c.dependencies(&children[i], c.spec.Children[i].DependsOn, index, varRefs)
	}
	order, cycle := topological(children, index)
	if cycle != nil {
		c.errorf(children[cycle[0]].Path, "%s", cycleMessage(children, cycle))
	}
	return order
}

// variableRefs is what each variable reads of the children, with what the variables it reads read.
func variableRefs(variables []CompiledVariable) map[string]expr.Refs {
	out := make(map[string]expr.Refs, len(variables))
	for _, v := range variables {
		out[v.Name] = withVariables(v.Expr.Refs(), out)
	}
	return out
}

// withVariables adds to refs what the variables it reads read (varRefs: those known so far).
func withVariables(refs expr.Refs, varRefs map[string]expr.Refs) expr.Refs {
	out := expr.Refs{}
	out.Add(refs)
	for name, r := range varRefs {
		if refs.AllVariables || refs.Variables[name] {
			out.Add(r)
		}
	}
	return out
}

// dependencies lists what one child waits for, in the order of the children listed.
func (c *compiler) dependencies(ch *CompiledChild, dependsOn []string, index map[string]int, varRefs map[string]expr.Refs) []Dependency {
	refs := expr.Refs{}
	refs.Add(ch.IncludeWhen.Refs())
	refs.Add(ch.ForEach.Refs())
	refs.Add(ch.Expression.Refs())
	refs.Add(ch.Template.Refs())
	refs = withVariables(refs, varRefs)
	deps := map[string]Dependency{}
	for id, status := range refs.Children {
		if _, ok := index[id]; ok && id != ch.ID {
			why := "it reads children." + id
			if status {
				why += "'s status"
			}
			deps[id] = Dependency{ID: id, Ready: status, Why: why}
		}
	}
	for j, id := range dependsOn {
		path := fmt.Sprintf("%s.dependsOn[%d]", ch.Path, j)
		switch _, ok := index[id]; {
		case id == ch.ID:
			c.errorf(path, "a child cannot depend on itself: remove %q", id)
		case !ok:
			c.errorf(path, "no child has id %q: name one of %s", id, strings.Join(sortedIDs(index), ", "))
		default:
			deps[id] = Dependency{ID: id, Ready: true, Named: !refs.Children[id], Why: "its dependsOn names " + id}
		}
	}
	out := make([]Dependency, 0, len(deps))
	for _, d := range deps {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Dependency) int { return index[a.ID] - index[b.ID] })
	return out
}

func sortedIDs(index map[string]int) []string {
	ids := make([]string, 0, len(index))
	for id := range index {
		ids = append(ids, fmt.Sprintf("%q", id))
	}
	slices.Sort(ids)
	return ids
}

// topological orders the children so that each comes after what it waits for, the others in the
// order listed (Kahn's algorithm, taking the first listed child that is free). When the children
// wait for each other in a cycle, it returns the cycle's indexes instead.
func topological(children []CompiledChild, index map[string]int) (order, cycle []int) {
	waits := make([]int, len(children))
	for i := range children {
		waits[i] = len(children[i].After)
	}
	done := make([]bool, len(children))
	for len(order) < len(children) {
		next := -1
		for i := range children {
			if !done[i] && waits[i] == 0 {
				next = i
				break
			}
		}
		if next < 0 {
			return nil, findCycle(children, index, done)
		}
		done[next] = true
		order = append(order, next)
		for i := range children {
			for _, d := range children[i].After {
				if d.ID == children[next].ID {
					waits[i]--
				}
			}
		}
	}
	return order, nil
}

// findCycle follows what the first child not done waits for until it comes back: a cycle.
func findCycle(children []CompiledChild, index map[string]int, done []bool) []int {
	start := slices.Index(done, false)
	seen := map[int]int{} // child → position in path
	var path []int
	for i := start; ; {
		if at, ok := seen[i]; ok {
			return path[at:]
		}
		seen[i] = len(path)
		path = append(path, i)
		for _, d := range children[i].After {
			if j := index[d.ID]; !done[j] {
				i = j
				break
			}
		}
	}
}

// cycleMessage says which children wait for each other, and how.
func cycleMessage(children []CompiledChild, cycle []int) string {
	ids := make([]string, 0, len(cycle)+1)
	var hows []string
	for k, i := range cycle {
		next := children[cycle[(k+1)%len(cycle)]].ID
		ids = append(ids, fmt.Sprintf("%q", children[i].ID))
		for _, d := range children[i].After {
			if d.ID == next {
				hows = append(hows, fmt.Sprintf("%q: %s", children[i].ID, d.Why))
			}
		}
	}
	ids = append(ids, fmt.Sprintf("%q", children[cycle[0]].ID))
	return fmt.Sprintf("the children %s wait for each other in a cycle (%s), so no order can apply them: "+
		"remove one of the references (a name both can compute from parent, say) or the dependsOn", strings.Join(ids, " → "), strings.Join(hows, "; "))
}
