package noop

import (
	"encoding/json"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"weak"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/kubernetes/scheme"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"

	"metacel.dev/metacel/runtime/builtinschema"
)

// Schema is what NeedsApply knows of the fields of one kind: which hold quantities, and how each
// list matches its items (by position, as a set, or by key). Build it with SchemaFor. A nil
// *Schema knows nothing: strings compare as strings, and lists as described in NeedsApply.
//
// A Schema is immutable and safe for concurrent use.
type Schema struct {
	root *node
}

// node is the schema of one value. A nil *node is unknown.
type node struct {
	// fields are an object's named fields; elem is the schema of its other keys (a map's values),
	// or of a list's items.
	fields map[string]*node
	elem   *node
	// quantity marks a value the API server may rewrite as an equal quantity ("0.5" as "500m").
	quantity bool
	list     listType
	// atomicObject marks an object the schema declares one value (+structType=atomic in a
	// built-in kind, as a SecretKeySelector; x-kubernetes-map-type: atomic in a CRD): managed
	// fields own it whole, and list none of its fields.
	atomicObject bool
	// keys are the key fields of a map list, sorted; keyDefaults their defaults (nil: none).
	keys        []string
	keyDefaults []any
	// zeroIsUnset names the fields of a built-in kind's object whose zero value ("", 0, false)
	// the API server reads as unset: a string, number or bool of its Go type, not a pointer,
	// encoded with omitempty. Defaulting or allocation then fills them in (a Service's clusterIP
	// "" is allocated, a container's imagePullPolicy "" defaulted), so the zero a policy sets
	// there matches whatever the server holds. A pointer's zero (allowPrivilegeEscalation:
	// false, replicas: 0) is a value, kept as sent.
	zeroIsUnset map[string]bool
}

type listType uint8

const (
	listUnknown listType = iota // no schema: see unknownList
	listAtomic                  // one value: items match by position
	listSet                     // scalars matched by value, wherever they are
	listMap                     // objects matched by their key fields, wherever they are
	listNamed                   // guessed without a schema: objects matched by name, in order
)

// field returns the schema of an object's key.
func (n *node) field(k string) *node {
	if n == nil {
		return nil
	}
	if f, ok := n.fields[k]; ok {
		return f
	}
	return n.elem
}

func (n *node) isQuantity() bool { return n != nil && n.quantity }

// readsZeroAsUnset reports whether the server reads the desired value v of the object's field k
// as no value at all: v is the zero of a field in zeroIsUnset.
func (n *node) readsZeroAsUnset(k string, v any) bool {
	switch x := v.(type) {
	case string:
		if x != "" {
			return false
		}
	case bool:
		if x {
			return false
		}
	case map[string]any, []any, nil:
		return false
	default:
		if !isZero(v) {
			return false
		}
	}
	return n != nil && n.zeroIsUnset[k]
}

// quantityNode is every quantity's schema.
var quantityNode = &node{quantity: true}

// Names of the types of client-go's schema that NeedsApply treats specially.
const (
	quantityType   = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	objectMetaType = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
)

// SchemaFor returns the schema of the objects of gvk. crd is the OpenAPI v3 schema of a custom
// resource's version (kinds.Info.Schema), when the caller has it. Without it, a built-in kind
// gets the structured-merge-diff schema that client-go ships (the one the API server's
// server-side apply follows); any other kind gets nil: every value is compared strictly (strings
// as strings), except metadata, which every kind shares.
//
// Schemas are built once, per kind for built-ins and per crd pointer for custom resources (a
// changed CRD, read again, is a new pointer), and cached; SchemaFor is safe for concurrent use.
func SchemaFor(gvk schema.GroupVersionKind, crd *apiextensionsv1.JSONSchemaProps) *Schema {
	if crd != nil {
		return crdSchema(crd)
	}
	return builtinSchema(gvk)
}

// builtins caches the schemas of built-in kinds, by GroupVersionKind; a kind client-go does not
// know maps to a nil *Schema.
var builtins sync.Map

func builtinSchema(gvk schema.GroupVersionKind) *Schema {
	if s, ok := builtins.Load(gvk); ok {
		return s.(*Schema)
	}
	var s *Schema
	if root := smd().root(gvk); root != nil {
		s = &Schema{root: root}
	}
	actual, _ := builtins.LoadOrStore(gvk, s)
	return actual.(*Schema)
}

// crds caches the schemas of custom resources by the address of their OpenAPI schema, held
// weakly: the entry goes when the CRD's schema is no longer used (a reloaded policy, a changed CRD).
var crds sync.Map

func crdSchema(crd *apiextensionsv1.JSONSchemaProps) *Schema {
	key := weak.Make(crd)
	if s, ok := crds.Load(key); ok {
		return s.(*Schema)
	}
	s := &Schema{root: fromCRD(crd)}
	actual, loaded := crds.LoadOrStore(key, s)
	if !loaded {
		runtime.AddCleanup(crd, func(k weak.Pointer[apiextensionsv1.JSONSchemaProps]) { crds.Delete(k) }, key)
	}
	return actual.(*Schema)
}

// unknownRoot is the schema of an object of an unknown kind: only its metadata is known.
func unknownRoot() *node {
	return smd().unknownRoot
}

// smdSchemas turns client-go's structured-merge-diff schema into nodes. Named types are built
// once, and shared by every kind that uses them.
type smdSchemas struct {
	conv        managedfields.TypeConverter
	schema      *smdschema.Schema
	objectMeta  *node
	unknownRoot *node

	mu    sync.Mutex
	named map[string]*node
}

var (
	smdOnce sync.Once
	smdAll  *smdSchemas
)

// smd parses client-go's schema on first use.
func smd() *smdSchemas {
	smdOnce.Do(func() {
		s := &smdSchemas{conv: builtinschema.TypeConverter(), schema: &builtinschema.Parser().Schema, named: map[string]*node{}}
		s.objectMeta = s.namedType(objectMetaType, reflect.TypeFor[metav1.ObjectMeta]())
		s.unknownRoot = &node{fields: map[string]*node{"metadata": s.objectMeta}}
		smdAll = s
	})
	return smdAll
}

// typeOnly is an object with nothing but its apiVersion and kind.
func typeOnly(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u
}

// root returns the schema of a built-in kind; nil when client-go does not know it.
func (s *smdSchemas) root(gvk schema.GroupVersionKind) *node {
	if gvk.Version == "" || gvk.Kind == "" {
		return nil
	}
	tv, err := s.conv.ObjectToTyped(typeOnly(gvk))
	if err != nil || tv.Schema() != s.schema {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ref(tv.TypeRef(), goType(gvk))
}

// goType is the Go type client-go decodes objects of gvk into; nil when it has none.
func goType(gvk schema.GroupVersionKind) reflect.Type {
	obj, err := scheme.Scheme.New(gvk)
	if err != nil {
		return nil
	}
	return reflect.TypeOf(obj)
}

func (s *smdSchemas) namedType(name string, t reflect.Type) *node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ref(smdschema.TypeRef{NamedType: &name}, t)
}

// ref builds the node of a type reference, whose values client-go decodes into the Go type t
// (nil: not known); under s.mu. A named type is built once, by the first reference to it: every
// reference to one named type has one Go type.
func (s *smdSchemas) ref(tr smdschema.TypeRef, t reflect.Type) *node {
	if tr.NamedType != nil && *tr.NamedType == quantityType {
		return quantityNode
	}
	if tr.NamedType != nil && tr.ElementRelationship == nil {
		name := *tr.NamedType
		if n, ok := s.named[name]; ok {
			return n
		}
		atom, ok := s.schema.Resolve(tr)
		if !ok {
			return nil
		}
		n := &node{}
		s.named[name] = n // before its fields: types may be recursive
		if !s.fill(n, atom, t) {
			s.named[name] = nil
			return nil
		}
		return n
	}
	atom, ok := s.schema.Resolve(tr)
	if !ok {
		return nil
	}
	n := &node{}
	if !s.fill(n, atom, t) {
		return nil
	}
	return n
}

// fill sets n from an atom of Go type t (nil: not known); it reports false when the atom says
// nothing useful (a scalar, or a value of any type), which leaves the value unknown.
func (s *smdSchemas) fill(n *node, atom smdschema.Atom, t reflect.Type) bool {
	switch {
	case atom.Scalar != nil, atom.List != nil && atom.Map != nil:
		return false
	case atom.List != nil:
		l := atom.List
		n.elem = s.ref(l.ElementType, elemType(t))
		n.list = listAtomic
		if l.ElementRelationship == smdschema.Associative {
			item, _ := s.schema.Resolve(l.ElementType)
			switch {
			case len(l.Keys) > 0 && item.Map != nil:
				n.list = listMap
				n.keys, n.keyDefaults = mapKeys(l.Keys, func(k string) any {
					f, _ := item.FindField(k)
					return f.Default
				})
			case item.Scalar != nil && item.Map == nil && item.List == nil:
				n.list = listSet
			}
		}
		return true
	case atom.Map != nil:
		m := atom.Map
		n.atomicObject = m.ElementRelationship == smdschema.Atomic
		if len(m.Fields) > 0 {
			n.fields = make(map[string]*node, len(m.Fields))
			goFields := jsonFields(t)
			for _, f := range m.Fields {
				gf, known := goFields[f.Name]
				n.fields[f.Name] = s.ref(f.Type, gf.Type)
				if known && zeroIsUnset(gf) {
					if n.zeroIsUnset == nil {
						n.zeroIsUnset = map[string]bool{}
					}
					n.zeroIsUnset[f.Name] = true
				}
			}
		}
		if m.ElementType.NamedType != nil || m.ElementType.Inlined != (smdschema.Atom{}) {
			n.elem = s.ref(m.ElementType, elemType(t))
		}
		return true
	}
	return false
}

// elemType is the Go type of the items of a slice or the values of a map of type t (pointers
// followed); nil when t is neither.
func elemType(t reflect.Type) reflect.Type {
	t = deref(t)
	if t == nil || (t.Kind() != reflect.Slice && t.Kind() != reflect.Map) {
		return nil
	}
	return t.Elem()
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonFields returns the fields of the struct type t (pointers followed) by their JSON names,
// those of inlined structs (TypeMeta) included; nil when t is no struct.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	t = deref(t)
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "" && f.Anonymous:
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
		case name != "":
			out[name] = f
		}
	}
	return out
}

// zeroIsUnset reports whether a zero value of the struct field f reads as unset: a string,
// number or bool, not a pointer, that JSON encoding leaves out when zero (omitempty).
func zeroIsUnset(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if !slices.Contains(strings.Split(opts, ","), "omitempty") {
		return false
	}
	switch f.Type.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// fromCRD builds the schema of a custom resource; its metadata is ObjectMeta's, whatever the
// CRD says.
func fromCRD(crd *apiextensionsv1.JSONSchemaProps) *node {
	root := fromJSONSchema(crd)
	if root == nil {
		root = &node{}
	}
	withMeta := make(map[string]*node, len(root.fields)+1)
	for k, f := range root.fields {
		withMeta[k] = f
	}
	withMeta["metadata"] = smd().objectMeta
	root.fields = withMeta
	return root
}

// fromJSONSchema builds the node of a structural OpenAPI v3 schema: int-or-string values (how a
// CRD declares a resource.Quantity) are quantities; lists follow x-kubernetes-list-type (atomic
// when unset, as for the API server).
func fromJSONSchema(s *apiextensionsv1.JSONSchemaProps) *node {
	if s == nil {
		return nil
	}
	if s.XIntOrString || s.Format == "quantity" {
		return quantityNode
	}
	switch {
	case s.Type == "array":
		n := &node{list: listAtomic}
		var item *apiextensionsv1.JSONSchemaProps
		if s.Items != nil {
			item = s.Items.Schema
		}
		n.elem = fromJSONSchema(item)
		switch {
		case s.XListType == nil:
		case *s.XListType == "set":
			n.list = listSet
		case *s.XListType == "map" && len(s.XListMapKeys) > 0 && item != nil:
			n.list = listMap
			n.keys, n.keyDefaults = mapKeys(s.XListMapKeys, func(k string) any {
				var v any
				if p, ok := item.Properties[k]; ok && p.Default != nil && json.Unmarshal(p.Default.Raw, &v) == nil {
					return v
				}
				return nil
			})
		}
		return n
	case s.Type == "object" || len(s.Properties) > 0:
		n := &node{atomicObject: s.XMapType != nil && *s.XMapType == "atomic"}
		if len(s.Properties) > 0 {
			n.fields = make(map[string]*node, len(s.Properties))
			for k, p := range s.Properties {
				n.fields[k] = fromJSONSchema(&p)
			}
		}
		if s.XEmbeddedResource {
			if n.fields == nil {
				n.fields = map[string]*node{}
			}
			n.fields["metadata"] = smd().objectMeta
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			n.elem = fromJSONSchema(s.AdditionalProperties.Schema)
		}
		if n.fields == nil && n.elem == nil && !n.atomicObject {
			return nil // any object (x-kubernetes-preserve-unknown-fields): unknown
		}
		return n
	}
	return nil
}

// mapKeys returns the key fields of a map list sorted by name, as managed fields list them
// (k:{"containerPort":80,"protocol":"TCP"}), with their defaults (nil: none).
func mapKeys(keys []string, defaultOf func(string) any) ([]string, []any) {
	sorted := slices.Clone(keys)
	slices.Sort(sorted)
	defaults := make([]any, len(sorted))
	for i, k := range sorted {
		defaults[i] = defaultOf(k)
	}
	return sorted, defaults
}
