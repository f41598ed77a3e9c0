package noop

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/apply"
)

// NeedsApply reports whether applying desired would change observed, an object of s's kind: a
// field metacel sets differs. A field metacel set before and no longer desires is not looked for:
// render's desired-hash annotation, which desired carries, changes with it (see the package doc).
// A nil s knows only metadata; observed's managed fields then tell the types of lists.
func (s *Schema) NeedsApply(desired, observed *unstructured.Unstructured) bool {
	root := unknownRoot()
	if s != nil {
		root = s.root
	}
	return !satisfied(desired.Object, observed.Object, root, ownedBy(observed))
}

// ContentNeedsApply is NeedsApply for what the policy computes alone: the labels and annotations
// that bookkeepingLabel and bookkeepingAnnotation say are metacel's own, and ownerReferences,
// which metacel writes for itself, are not compared (package decide compares them apart, and
// brings them up to date with a patch of metadata, never by writing the child again).
//
// writtenAsDesired says that metacel's last write of observed was of desired's very content
// (the caller reads it from the object: its content hash). A value that then differs from
// desired while metacel's managed fields still own it (a scalar, or a list or an object the
// schema says is one value, owned whole: see owned.admitted) is what admission made of that
// write: a mutating webhook or admission policy rewrote it in metacel's own request (an image tag
// pinned to a digest), since any other writer's change of the value takes the field over. It
// matches: applying desired again would be rewritten the same way.
func (s *Schema) ContentNeedsApply(desired, observed *unstructured.Unstructured, bookkeepingLabel, bookkeepingAnnotation func(string) bool, writtenAsDesired bool) bool {
	root := unknownRoot()
	if s != nil {
		root = s.root
	}
	own := ownedBy(observed)
	if writtenAsDesired {
		own = writtenBy(observed)
	}
	for k, dv := range desired.Object {
		ov, ok := observed.Object[k]
		sub := own.field(k)
		switch {
		case root.readsZeroAsUnset(k, dv) && own.owns(k):
		case k == "metadata":
			if !contentMetadataSatisfied(dv, ov, root.field(k), sub, bookkeepingLabel, bookkeepingAnnotation) {
				return true
			}
		case !ok:
			if !isZero(dv) {
				return true
			}
		case !satisfied(dv, ov, root.field(k), sub) && !own.admitted(k, dv, root.field(k)):
			return true
		}
	}
	return false
}

// contentMetadataSatisfied is satisfied for an object's metadata, less metacel's bookkeeping.
func contentMetadataSatisfied(desired, observed any, n *node, own owned, bookkeepingLabel, bookkeepingAnnotation func(string) bool) bool {
	d, _ := desired.(map[string]any)
	o, _ := observed.(map[string]any)
	for k, dv := range d {
		switch k {
		case "ownerReferences":
			continue
		case "labels":
			if !stringsSatisfied(dv, o[k], bookkeepingLabel, own.field(k)) {
				return false
			}
		case "annotations":
			if !stringsSatisfied(dv, o[k], bookkeepingAnnotation, own.field(k)) {
				return false
			}
		default:
			ov, ok := o[k]
			if !ok && isZero(dv) || n.readsZeroAsUnset(k, dv) && own.owns(k) {
				continue
			}
			if !ok || !satisfied(dv, ov, n.field(k), own.field(k)) && !own.admitted(k, dv, n.field(k)) {
				return false
			}
		}
	}
	return true
}

// stringsSatisfied matches a map of strings (labels, annotations) but for the keys skip says.
func stringsSatisfied(desired, observed any, skip func(string) bool, own owned) bool {
	d, _ := desired.(map[string]any)
	o, _ := observed.(map[string]any)
	for k, dv := range d {
		if skip(k) {
			continue
		}
		ov, ok := o[k]
		if !ok && isZero(dv) {
			continue
		}
		if !ok || !sameScalar(dv, ov, nil) && !own.admitted(k, dv, nil) {
			return false
		}
	}
	return true
}

// owned is what metacel's managed fields say of a value: fields, the managed fields of it (nil:
// none), and known, whether they tell which of its fields metacel owns (false: no managed fields
// to read, as for an object written by hand, or inside an atomic list, whose items have none).
// admits says that metacel's last write was of the desired content (ContentNeedsApply's
// writtenAsDesired): a value it still owns is then as that write left it.
type owned struct {
	fields map[string]any
	known  bool
	admits bool
}

// ownedBy is what metacel's managed fields say of an object.
func ownedBy(obj *unstructured.Unstructured) owned {
	fields := apply.ManagedBy(obj, apply.FieldManager)
	return owned{fields: fields, known: fields != nil}
}

// writtenBy is ownedBy for an object whose last write by metacel was of the desired content: the
// fields it applied, or, for an object it created and has not applied since, the fields of its
// create (the API server's defaults among them, which desired does not set).
func writtenBy(obj *unstructured.Unstructured) owned {
	fields := apply.ManagedBy(obj, apply.FieldManager)
	if fields == nil {
		fields = apply.UpdatedBy(obj, apply.FieldManager)
	}
	return owned{fields: fields, known: fields != nil, admits: true}
}

// field is what the managed fields say of field k of the value.
func (o owned) field(k string) owned {
	sub, _ := o.fields["f:"+k].(map[string]any)
	return owned{fields: sub, known: o.known, admits: o.admits}
}

// owns reports whether metacel owns field k of the value, or cannot tell: a field it owns holds
// what it applied, as the server stored it (a zero it sent, defaulted or allocated), where another
// writer's change takes the field over.
func (o owned) owns(k string) bool {
	if !o.known {
		return true
	}
	_, ok := o.fields["f:"+k]
	return ok
}

// admitted reports whether field k, desired as dv, of schema n (nil: unknown), holds whatever its
// value what admission made of metacel's last write of the desired content: that write was of the
// desired content (admits), and metacel owns the field whole: a scalar, or a list or an object
// the schema says is atomic (one value: a container's args, an env var's
// valueFrom.secretKeyRef), with no entries of its own. Another writer's change of the value takes
// the field over. Not an object or a list of another or unknown type: their entry in metacel's
// managed fields may be left empty when others took every field of them over (a map metacel
// created keeps its own entry), which would read as owned whole.
func (o owned) admitted(k string, dv any, n *node) bool {
	if !o.admits || !o.known {
		return false
	}
	switch dv.(type) {
	case map[string]any:
		if n == nil || !n.atomicObject {
			return false
		}
	case []any:
		if n == nil || n.list != listAtomic {
			return false
		}
	}
	sub, ok := o.fields["f:"+k].(map[string]any)
	return ok && len(sub) == 0
}

// unknown is what the managed fields say of a value they do not cover.
var unknown = owned{}

// satisfied reports whether observed already holds every field of desired, as the API server
// stores it; n is the schema of the value (nil: unknown), managed the fields metacel set there
// before (nil: not known), which type the lists n does not:
//   - each map key of desired is in observed with a satisfied value; a zero value ("", 0, false,
//     empty list or map) also matches an absent key, since the server drops omitempty fields; a
//     null matches anything, since the server stores nothing of it, and so does a zero the
//     server reads as unset (node.zeroIsUnset: a Service's clusterIP "" is allocated);
//   - a list matches as its schema says (listSatisfied): by key, as a set, or item by item;
//   - numbers compare by value (3 and 3.0 are equal); strings compare as strings, except where
//     the schema says quantity: there "0.5" and "500m" are the same CPU, as the server rewrites
//     one as the other.
//
// Fields only observed has (defaults, status, fields of other managers, fields metacel set before
// and no longer desires) do not matter.
func satisfied(desired, observed any, n *node, own owned) bool {
	switch d := desired.(type) {
	case map[string]any:
		o, ok := observed.(map[string]any)
		if !ok {
			return false
		}
		for k, dv := range d {
			ov, ok := o[k]
			if !ok {
				if isZero(dv) {
					continue
				}
				return false
			}
			if n.readsZeroAsUnset(k, dv) && own.owns(k) {
				continue
			}
			if !satisfied(dv, ov, n.field(k), own.field(k)) && !own.admitted(k, dv, n.field(k)) {
				return false
			}
		}
		return true
	case []any:
		o, _ := observed.([]any)
		return listSatisfied(d, o, n, own)
	case nil:
		return true // server-side apply stores nothing of a null (creationTimestamp: null, as kubectl prints it)
	}
	return sameScalar(desired, observed, n)
}

// listSatisfied matches a list by its type:
//   - a map list (containers by name, ports by containerPort and protocol, a CRD's
//     x-kubernetes-list-type: map) matches each desired item with the observed item of the same
//     keys, wherever it is: order does not matter, and items admission added (a token volume, an
//     injected sidecar) are ignored, first or last;
//   - a set (finalizers, x-kubernetes-list-type: set) needs each desired value somewhere;
//   - an atomic list (a container's args, tolerations, a CRD list without a list type) matches
//     item by item, in order; observed may have more items after them (admission appends some,
//     such as default tolerations).
//
// Without a schema the managed fields tell: "k:" entries make it a map list by those keys, "v:"
// a set, an entry without items an atomic list. With no managed fields either, a list whose
// desired items all have distinct names matches them by name in the same order, whatever
// observed has around them; any other list is atomic.
func listSatisfied(d, o []any, n *node, own owned) bool {
	managed := own.fields
	var elem *node
	list := listUnknown
	var keys []string
	var defaults []any
	if n != nil {
		elem, list, keys, defaults = n.elem, n.list, n.keys, n.keyDefaults
	}
	if list == listUnknown {
		list, keys = unknownList(d, managed)
	}
	switch list {
	case listMap:
		return mapListSatisfied(d, o, elem, keys, defaults, own)
	case listSet:
		return setSatisfied(d, o, elem)
	case listNamed:
		return namedSatisfied(d, o, elem)
	}
	return atomicSatisfied(d, o, elem, managed)
}

// unknownList guesses the type of a list without a schema, and a map list's keys (every key field
// its keyed entries name: one without a value and a default is left out of an entry).
func unknownList(d []any, managed map[string]any) (listType, []string) {
	var keys []string
	for f := range managed {
		switch {
		case strings.HasPrefix(f, "k:"):
			var key map[string]any
			if json.Unmarshal([]byte(f[2:]), &key) == nil {
				for k := range key {
					if !slices.Contains(keys, k) {
						keys = append(keys, k)
					}
				}
			}
		case strings.HasPrefix(f, "v:"):
			return listSet, nil
		case strings.HasPrefix(f, "i:"):
			return listAtomic, nil
		}
	}
	switch {
	case len(keys) > 0:
		slices.Sort(keys)
		return listMap, keys
	case managed == nil && distinctNames(d):
		return listNamed, nil
	}
	return listAtomic, nil
}

// distinctNames reports whether every item has a name, and no two the same.
func distinctNames(d []any) bool {
	if len(d) == 0 {
		return false
	}
	seen := make(map[string]bool, len(d))
	for _, item := range d {
		m, _ := item.(map[string]any)
		name, _ := m["name"].(string)
		if name == "" || seen[name] {
			return false
		}
		seen[name] = true
	}
	return true
}

// atomicSatisfied matches items by position; observed may have more.
func atomicSatisfied(d, o []any, elem *node, managed map[string]any) bool {
	if len(o) < len(d) {
		return false
	}
	for i := range d {
		sub := unknown // an atomic list's items have no managed fields of their own
		if len(managed) > 0 {
			sub.fields, _ = managed["i:"+strconv.Itoa(i)].(map[string]any)
		}
		if !satisfied(d[i], o[i], elem, sub) {
			return false
		}
	}
	return true
}

// mapListSatisfied matches a map list by keys. Each desired item's managed fields (for the lists
// inside it) are found by its key ("k:{...}"), spelt as the API server spells it when that is
// simple, else by parsing the keyed entries.
func mapListSatisfied(d, o []any, elem *node, keys []string, defaults []any, own owned) bool {
	managed := own.fields
	for _, item := range d {
		di, ok := item.(map[string]any)
		if !ok {
			return false
		}
		oi := findItem(o, di, keys, defaults)
		if oi == nil {
			return false
		}
		item := owned{known: own.known, admits: own.admits} // an item metacel does not own: known, and none of its fields
		if len(managed) > 0 {
			f, found := keyPath(di, keys, defaults)
			if _, ok := managed[f]; !found || !ok {
				f, found = findOwned(managed, di, keys, defaults)
			}
			if found {
				item.fields, _ = managed[f].(map[string]any)
			}
		}
		if !satisfied(di, oi, elem, item) {
			return false
		}
	}
	return true
}

// findOwned finds the keyed entry of an item in managed fields by parsing each.
func findOwned(managed map[string]any, item map[string]any, keys []string, defaults []any) (string, bool) {
	for f := range managed {
		if k, isKey := strings.CutPrefix(f, "k:"); isKey {
			var key map[string]any
			if json.Unmarshal([]byte(k), &key) == nil && sameKey(key, item, keys, defaults) {
				return f, true
			}
		}
	}
	return "", false
}

// keyPath spells the managed fields entry of a map list's item as the API server does:
// k:{"containerPort":80,"protocol":"TCP"}, key fields sorted, defaults filled in. It reports
// false for a value it cannot be sure to spell the same way.
func keyPath(item map[string]any, keys []string, defaults []any) (string, bool) {
	b := make([]byte, 0, 64)
	b = append(b, "k:{"...)
	n := 0
	for i, k := range keys {
		v, ok := item[k]
		if !ok && defaults != nil && defaults[i] != nil {
			v, ok = defaults[i], true
		}
		if !ok {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		var plain bool
		if b, plain = appendJSONString(b, k); !plain {
			return "", false
		}
		b = append(b, ':')
		if b, plain = appendJSONScalar(b, v); !plain {
			return "", false
		}
	}
	return string(append(b, '}')), n > 0
}

// appendJSONScalar appends a scalar as JSON if it is plain: an integer, a boolean or a string of
// printable ASCII that no JSON encoder escapes.
func appendJSONScalar(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case string:
		return appendJSONString(b, x)
	case bool:
		return strconv.AppendBool(b, x), true
	}
	if n, ok := toNumber(v); ok {
		if n.isInt {
			return strconv.AppendInt(b, n.i, 10), true
		}
		if n.f == math.Trunc(n.f) && math.Abs(n.f) < 1<<53 {
			return strconv.AppendInt(b, int64(n.f), 10), true
		}
	}
	return b, false
}

func appendJSONString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// findItem returns the item of a map list with the keys of want.
func findItem(list []any, want map[string]any, keys []string, defaults []any) map[string]any {
	for _, item := range list {
		if m, ok := item.(map[string]any); ok && sameKey(want, m, keys, defaults) {
			return m
		}
	}
	return nil
}

// sameKey reports whether two items of a map list have the same keys; a key field an item does
// not set has its default, and one without a default matches any value (the server would have
// refused an item missing it).
func sameKey(a, b map[string]any, keys []string, defaults []any) bool {
	for i, k := range keys {
		av, aok := a[k]
		bv, bok := b[k]
		if !aok && defaults != nil && defaults[i] != nil {
			av, aok = defaults[i], true
		}
		if !bok && defaults != nil && defaults[i] != nil {
			bv, bok = defaults[i], true
		}
		if aok && bok && !sameScalar(av, bv, nil) {
			return false
		}
	}
	return true
}

// setSatisfied needs each desired value in observed.
func setSatisfied(d, o []any, elem *node) bool {
	for _, v := range d {
		if !containsScalar(o, v, elem) {
			return false
		}
	}
	return true
}

func containsScalar(list []any, v any, elem *node) bool {
	for _, item := range list {
		if sameScalar(v, item, elem) {
			return true
		}
	}
	return false
}

// namedSatisfied matches items by name, in desired's order, skipping observed items in between.
func namedSatisfied(d, o []any, elem *node) bool {
	next := 0
	for _, item := range d {
		di := item.(map[string]any)
		found := -1
		for j := next; j < len(o) && found < 0; j++ {
			if oi, ok := o[j].(map[string]any); ok && oi["name"] == di["name"] {
				found = j
			}
		}
		if found < 0 || !satisfied(di, o[found], elem, unknown) {
			return false
		}
		next = found + 1
	}
	return true
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	}
	n, ok := toNumber(v)
	return ok && n.float() == 0
}

// sameScalar compares scalars as the server stores them: strings as strings, numbers by value,
// and where n is a quantity, a quantity by value (the server stores a quantity, string or
// number, as its canonical string).
func sameScalar(desired, observed any, n *node) bool {
	switch d := desired.(type) {
	case string:
		o, ok := observed.(string)
		return ok && (d == o || n.isQuantity() && sameQuantity(d, o))
	case bool:
		o, ok := observed.(bool)
		return ok && d == o
	}
	if dn, ok := toNumber(desired); ok {
		if on, ok := toNumber(observed); ok {
			return dn.equal(on)
		}
		o, isString := observed.(string)
		return isString && n.isQuantity() && sameQuantity(dn.String(), o)
	}
	return reflect.DeepEqual(desired, observed)
}

func sameQuantity(a, b string) bool {
	qa, err := resource.ParseQuantity(a)
	if err != nil {
		return false
	}
	qb, err := resource.ParseQuantity(b)
	return err == nil && qa.Cmp(qb) == 0
}

// num is a JSON number: an integer, exactly, or a float.
type num struct {
	i     int64
	f     float64
	isInt bool
}

func (n num) float() float64 {
	if n.isInt {
		return float64(n.i)
	}
	return n.f
}

func (n num) equal(m num) bool {
	if n.isInt && m.isInt {
		return n.i == m.i
	}
	return n.float() == m.float()
}

func (n num) String() string {
	if n.isInt {
		return strconv.FormatInt(n.i, 10)
	}
	return strconv.FormatFloat(n.f, 'f', -1, 64)
}

func toNumber(v any) (num, bool) {
	switch x := v.(type) {
	case int64:
		return num{i: x, isInt: true}, true
	case int:
		return num{i: int64(x), isInt: true}, true
	case int32:
		return num{i: int64(x), isInt: true}, true
	case float64:
		return num{f: x}, true
	}
	return num{}, false
}
