package expr

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/runtime"

	"metacel.dev/metacel/runtime/fieldpath"
)

// Template is a compiled YAML value whose strings may hold ${} expressions.
type Template struct {
	root tnode
}

// tnode is one compiled value of a template. eval returns ok=false for a value that is absent (an
// optional with no value, or null from a whole-value expression): its field is left out.
type tnode interface {
	eval(ctx context.Context, act Activation, b *Budget) (v any, ok bool, err error)
}

// CompileTemplate compiles every ${} in v, a JSON-like value. path locates v in its policy; the
// errors (PathErrors) locate each bad expression below it.
func (e *Env) CompileTemplate(v any, path string) (*Template, error) {
	c := &templateCompiler{env: e}
	root := c.compile(v, path)
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return &Template{root: root}, nil
}

// CompileString compiles one string template whose result must satisfy want; a string without
// ${} compiles to a constant.
func (e *Env) CompileString(s, path string, want Want) (*Template, error) {
	c := &templateCompiler{env: e}
	root := c.compileString(s, path, want)
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return &Template{root: root}, nil
}

// Eval evaluates the template into fresh JSON-like values. An absent root gives nil.
func (t *Template) Eval(ctx context.Context, act Activation, b *Budget) (any, error) {
	v, _, err := t.root.eval(ctx, act, b)
	return v, err
}

type templateCompiler struct {
	env  *Env
	errs PathErrors
}

func (c *templateCompiler) fail(path string, err error) tnode {
	c.errs = append(c.errs, &pathError{Path: path, Err: err})
	return constNode{}
}

func (c *templateCompiler) compile(v any, path string) tnode {
	switch x := v.(type) {
	case map[string]any:
		return c.compileMap(x, path)
	case []any:
		items := make([]tnode, len(x))
		constant := true
		for i, item := range x {
			items[i] = c.compile(item, fieldpath.Index(path, i))
			_, isConst := items[i].(constNode)
			constant = constant && isConst
		}
		if constant {
			return constNode{v: x}
		}
		return listNode(items)
	case string:
		return c.compileString(x, path, WantAny)
	}
	return constNode{v: v}
}

func (c *templateCompiler) compileMap(m map[string]any, path string) tnode {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	n := mapNode{keys: keys, vals: make([]tnode, len(keys))}
	constant := true
	for i, k := range keys {
		if strings.Contains(k, "${") {
			c.fail(fieldpath.Field(path, k), fmt.Errorf("a map key cannot be a template; build the map with an expression instead: \"${{...}}\""))
		}
		n.vals[i] = c.compile(m[k], fieldpath.Field(path, k))
		_, isConst := n.vals[i].(constNode)
		constant = constant && isConst
	}
	if constant {
		return constNode{v: m}
	}
	return n
}

func (c *templateCompiler) compileString(s, path string, want Want) tnode {
	segs, err := splitTemplate(s)
	if err != nil {
		return c.fail(path, err)
	}
	if len(segs) == 1 && segs[0].expr {
		p, err := c.env.compile(segs[0].text, want, want == WantAny)
		if err != nil {
			return c.fail(path, err)
		}
		return exprNode{p}
	}
	var n interpNode
	for _, seg := range segs {
		if !seg.expr {
			n = append(n, part{lit: seg.text})
			continue
		}
		p, err := c.env.Compile(seg.text, WantScalar)
		var wrongType *ResultTypeError
		if errors.As(err, &wrongType) {
			err = fmt.Errorf("%w (inside a string only strings, numbers and bools can be interpolated; write the whole value as \"${...}\" to keep its type)", err)
		}
		if err != nil {
			return c.fail(path, err)
		}
		n = append(n, part{prg: p})
	}
	if len(n) == 0 {
		return constNode{v: ""}
	}
	if len(n) == 1 && n[0].prg == nil {
		if want != WantAny && want != WantString && want != WantScalar {
			return c.fail(path, fmt.Errorf("must be an expression \"${...}\" returning %s", want))
		}
		return constNode{v: n[0].lit}
	}
	if want != WantAny && want != WantString && want != WantScalar {
		return c.fail(path, fmt.Errorf("builds a string, but must return %s: write it as one expression \"${...}\"", want))
	}
	return n
}

type constNode struct{ v any }

func (n constNode) eval(context.Context, Activation, *Budget) (any, bool, error) {
	return runtime.DeepCopyJSONValue(n.v), true, nil
}

type exprNode struct{ p *Program }

func (n exprNode) eval(ctx context.Context, act Activation, b *Budget) (any, bool, error) {
	v, err := n.p.EvalNative(ctx, act, b) // an optional without a value gives nil: absent
	if err != nil {
		return nil, false, err
	}
	return v, v != nil, nil
}

type part struct {
	lit string
	prg *Program
}

type interpNode []part

func (n interpNode) eval(ctx context.Context, act Activation, b *Budget) (any, bool, error) {
	var sb strings.Builder
	for _, p := range n {
		if p.prg == nil {
			sb.WriteString(p.lit)
			continue
		}
		val, err := p.prg.Eval(ctx, act, b)
		if err != nil {
			return nil, false, err
		}
		switch x := val.(type) {
		case types.String:
			// written out once more each time the template is evaluated
			if err := p.prg.chargeResult(b, traversal(uint64(len(x)))); err != nil {
				return nil, false, err
			}
			sb.WriteString(string(x))
		case types.Int:
			sb.WriteString(strconv.FormatInt(int64(x), 10))
		case types.Uint:
			sb.WriteString(strconv.FormatUint(uint64(x), 10))
		case types.Double:
			sb.WriteString(strconv.FormatFloat(float64(x), 'g', -1, 64))
		case types.Bool:
			sb.WriteString(strconv.FormatBool(bool(x)))
		default:
			return nil, false, fmt.Errorf("evaluate %q: inside a string it must return a string, number or bool, got %s", p.prg.Source, val.Type().TypeName())
		}
	}
	return sb.String(), true, nil
}

type mapNode struct {
	keys []string
	vals []tnode
}

func (n mapNode) eval(ctx context.Context, act Activation, b *Budget) (any, bool, error) {
	out := make(map[string]any, len(n.keys))
	for i, k := range n.keys {
		v, ok, err := n.vals[i].eval(ctx, act, b)
		if err != nil {
			return nil, false, atStep(k, err)
		}
		if ok {
			out[k] = v
		}
	}
	return out, true, nil
}

type listNode []tnode

func (n listNode) eval(ctx context.Context, act Activation, b *Budget) (any, bool, error) {
	out := make([]any, 0, len(n))
	for i, item := range n {
		v, ok, err := item.eval(ctx, act, b)
		if err != nil {
			return nil, false, atStep(i, err)
		}
		if ok {
			out = append(out, v)
		}
	}
	return out, true, nil
}

// segment is literal text or the source of one ${} expression.
type segment struct {
	text string
	expr bool
}

// splitTemplate cuts s into literal text and ${} expressions. "$${" is a literal "${". The end of
// an expression is the "}" that closes its "${", skipping braces inside CEL string literals and
// nested map literals.
func splitTemplate(s string) ([]segment, error) {
	var segs []segment
	var lit strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end, err := exprEnd(s, i+2)
			if err != nil {
				return nil, err
			}
			src := strings.TrimSpace(s[i+2 : end])
			if src == "" {
				return nil, fmt.Errorf("empty expression \"${}\" at offset %d", i)
			}
			if lit.Len() > 0 {
				segs = append(segs, segment{text: lit.String()})
				lit.Reset()
			}
			segs = append(segs, segment{text: src, expr: true})
			i = end + 1
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	if lit.Len() > 0 || len(segs) == 0 {
		segs = append(segs, segment{text: lit.String()})
	}
	return segs, nil
}

// Substitute returns the text of a template string with each ${} expression replaced by what sub
// gives for its source ("$${" is a literal "${"), and how many expressions it holds.
func Substitute(s string, sub func(src string) string) (string, int, error) {
	segs, err := splitTemplate(s)
	if err != nil {
		return "", 0, err
	}
	var b strings.Builder
	n := 0
	for _, seg := range segs {
		if seg.expr {
			n++
			b.WriteString(sub(seg.text))
			continue
		}
		b.WriteString(seg.text)
	}
	return b.String(), n, nil
}

var errUnterminated = errors.New("unterminated")

// exprEnd returns the index of the "}" closing an expression that starts at start.
func exprEnd(s string, start int) (int, error) {
	depth := 0
	for i := start; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			end, err := stringEnd(s, i)
			if err != nil {
				return 0, fmt.Errorf("unterminated string literal in \"${\" at offset %d", start-2)
			}
			i = end
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return i, nil
			}
			depth--
		}
	}
	return 0, fmt.Errorf("%w \"${\" at offset %d: close it with \"}\" (or write \"$${\" for a literal \"${\")", errUnterminated, start-2)
}

// stringEnd returns the index of the quote closing the CEL string literal opened at i, with
// triple quotes, escapes and raw strings (r'...').
func stringEnd(s string, i int) (int, error) {
	q := s[i : i+1]
	if strings.HasPrefix(s[i:], strings.Repeat(q, 3)) {
		q = strings.Repeat(q, 3)
	}
	raw := i > 0 && (s[i-1] == 'r' || s[i-1] == 'R')
	for j := i + len(q); j < len(s); j++ {
		if s[j] == '\\' && !raw {
			j++
			continue
		}
		if strings.HasPrefix(s[j:], q) {
			return j + len(q) - 1, nil
		}
	}
	return 0, errUnterminated
}

// FieldError is a template's evaluation error, at the field of the template whose value failed
// (a map key or a list index, from the template's root): a message can name the field, and a
// policy's source its line, not only the template.
type FieldError struct {
	// steps lead from the failing field up to the root: a key (string) or an index (int)
	steps []any
	Err   error
}

func (e *FieldError) Error() string { return e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// Path is the failing field's path below the template at base (fieldpath's notation).
func (e *FieldError) Path(base string) string {
	for i := len(e.steps) - 1; i >= 0; i-- {
		switch s := e.steps[i].(type) {
		case string:
			base = fieldpath.Field(base, s)
		case int:
			base = fieldpath.Index(base, s)
		}
	}
	return base
}

// atStep is err of the value at a key or index of its parent value.
func atStep(step any, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		fe.steps = append(fe.steps, step)
		return fe
	}
	return &FieldError{steps: []any{step}, Err: err}
}

// Sources are the expressions of the template, in the order of its fields (sorted keys, list
// order), each as written.
func (t *Template) Sources() []string {
	var out []string
	var walk func(n tnode)
	walk = func(n tnode) {
		switch n := n.(type) {
		case exprNode:
			out = append(out, n.p.Source)
		case interpNode:
			for _, p := range n {
				if p.prg != nil {
					out = append(out, p.prg.Source)
				}
			}
		case mapNode:
			for _, v := range n.vals {
				walk(v)
			}
		case listNode:
			for _, v := range n {
				walk(v)
			}
		}
	}
	walk(t.root)
	return out
}
