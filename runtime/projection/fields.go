package projection

import (
	"slices"
	"strings"
)

// Fields is the part of an object kept: a tree of field names (doc.go). The nil *Fields keeps the
// whole object; so does one made by Whole. The zero Fields keeps only the identifying part.
type Fields struct {
	whole bool
	sub   map[string]*Fields
}

// Whole returns the Fields that keeps the whole object.
func Whole() *Fields { return &Fields{whole: true} }

// Identity reports whether a top-level field is part of every projection: what names, keys and
// indexes an object.
func Identity(name string) bool {
	return name == "apiVersion" || name == "kind" || name == "metadata"
}

// Keep adds a path (its names, from the top of the object) and everything below it. An empty
// path keeps the whole object. It returns f.
func (f *Fields) Keep(path ...string) *Fields {
	n := f
	for _, name := range path {
		if n.whole {
			return f
		}
		next := n.sub[name]
		if next == nil {
			if n.sub == nil {
				n.sub = map[string]*Fields{}
			}
			next = &Fields{}
			n.sub[name] = next
		}
		n = next
	}
	n.whole, n.sub = true, nil
	return f
}

// Add keeps what o keeps too; a nil o keeps the whole object. It returns f.
func (f *Fields) Add(o *Fields) *Fields {
	switch {
	case f.whole:
	case o == nil || o.whole:
		f.whole, f.sub = true, nil
	default:
		for name, sub := range o.sub {
			if f.sub[name] == nil {
				if f.sub == nil {
					f.sub = map[string]*Fields{}
				}
				f.sub[name] = &Fields{}
			}
			f.sub[name].Add(sub)
		}
	}
	return f
}

// Body returns f without the identifying fields, which every projection keeps: Fields that keep
// the same body are then equal (String). f itself is not changed.
func (f *Fields) Body() *Fields {
	if f.IsWhole() {
		return f
	}
	out := &Fields{sub: make(map[string]*Fields, len(f.sub))}
	for name, sub := range f.sub {
		if !Identity(name) {
			out.sub[name] = sub
		}
	}
	return out
}

// IsWhole reports whether f keeps the whole object (or value).
func (f *Fields) IsWhole() bool { return f == nil || f.whole }

// Field returns what is kept of the field name of a value f keeps part of: nil, false when it is
// dropped; a whole Fields when it is kept whole.
func (f *Fields) Field(name string) (*Fields, bool) {
	if f.IsWhole() {
		return f, true
	}
	sub, ok := f.sub[name]
	return sub, ok
}

// Covers reports whether f keeps the field at path (and so everything a read of it may see).
func (f *Fields) Covers(path ...string) bool {
	n := f
	for _, name := range path {
		if n.IsWhole() {
			return true
		}
		next, ok := n.sub[name]
		if !ok {
			return false
		}
		n = next
	}
	return n.IsWhole()
}

// String writes f canonically ("*" for the whole object, names sorted): equal Fields give equal
// strings, so that it can key the informer of a resource projected so.
func (f *Fields) String() string {
	var b strings.Builder
	f.write(&b)
	return b.String()
}

func (f *Fields) write(b *strings.Builder) {
	if f.IsWhole() {
		b.WriteByte('*')
		return
	}
	names := make([]string, 0, len(f.sub))
	for name := range f.sub {
		names = append(names, name)
	}
	slices.Sort(names)
	b.WriteByte('{')
	for i, name := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.ReplaceAll(name, ",", `\,`))
		if sub := f.sub[name]; !sub.IsWhole() {
			sub.write(b) // a name alone is kept whole
		}
	}
	b.WriteByte('}')
}

// Map returns obj with only what f keeps (and the identifying fields): a new map sharing the
// values kept whole with obj. A nil f returns obj itself.
func Map(obj map[string]any, f *Fields) map[string]any {
	if f.IsWhole() {
		return obj
	}
	out := make(map[string]any, len(f.sub)+3)
	for name, v := range obj {
		if Identity(name) {
			out[name] = v
		} else if sub, ok := f.sub[name]; ok {
			out[name] = value(v, sub)
		}
	}
	return out
}

// value returns v with only what f keeps: an object's fields named, each item of a list so.
func value(v any, f *Fields) any {
	if f.IsWhole() {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(f.sub))
		for name, sub := range f.sub {
			if fv, ok := x[name]; ok {
				out[name] = value(fv, sub)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = value(item, f)
		}
		return out
	default:
		return v
	}
}
