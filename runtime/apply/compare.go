package apply

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// NeedsApply reports whether applying desired would change observed: a field metacel sets differs,
// or a field metacel set before is no longer desired (it would be removed). Observed's managed
// fields say what metacel set before.
func NeedsApply(desired, observed *unstructured.Unstructured) bool {
	return !satisfied(desired.Object, observed.Object, managedBy(observed, FieldManager))
}

// AppliedBy reports whether metacel has applied obj (it has metacel's Apply entry in its managed
// fields): a copy of a child that only carries metacel's labels is not metacel's to delete.
func AppliedBy(obj *unstructured.Unstructured) bool {
	return managedBy(obj, FieldManager) != nil
}

// managedBy returns the fields a manager applied to obj, as the fieldsV1 tree ("f:spec": {...}).
func managedBy(obj *unstructured.Unstructured, manager string) map[string]any {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager && mf.Operation == metav1.ManagedFieldsOperationApply && mf.Subresource == "" && mf.FieldsV1 != nil {
			var tree map[string]any
			if json.Unmarshal(mf.FieldsV1.GetRawBytes(), &tree) == nil {
				return tree
			}
		}
	}
	return nil
}

// satisfied reports whether observed already holds every field of desired, as the API server
// stores it:
//   - each map key of desired is in observed with a satisfied value; a zero value ("", 0, false,
//     empty list or map) also matches an absent key, since the server drops omitempty fields;
//   - a map key metacel set before (managed, "f:<key>") and no longer desires must be removed;
//   - a list matches item by item; observed may have more items (admission appends some, such as
//     a service account token volume), unless metacel itself set more items before (managed
//     counts them), which means an item was removed;
//   - numbers compare by value, and quantities by quantity ("0.5" and "500m" are the same CPU).
//
// Fields only observed has (defaults, status, fields of other managers) do not matter.
func satisfied(desired, observed any, managed map[string]any) bool {
	switch d := desired.(type) {
	case map[string]any:
		o, ok := observed.(map[string]any)
		if !ok {
			return false
		}
		for f := range managed {
			if key, isField := strings.CutPrefix(f, "f:"); isField {
				if _, still := d[key]; !still {
					if _, present := o[key]; present {
						return false
					}
				}
			}
		}
		for k, dv := range d {
			ov, ok := o[k]
			if !ok {
				if isZero(dv) {
					continue
				}
				return false
			}
			sub, _ := managed["f:"+k].(map[string]any)
			if !satisfied(dv, ov, sub) {
				return false
			}
		}
		return true
	case []any:
		o, _ := observed.([]any)
		if len(o) < len(d) || managedItems(managed) > len(d) {
			return false
		}
		for i := range d {
			if !satisfied(d[i], o[i], itemManaged(managed, o[i], i)) {
				return false
			}
		}
		return true
	case nil:
		return observed == nil
	}
	return sameScalar(desired, observed)
}

// managedItems counts the list items metacel set before: keyed ("k:"), set ("v:") or indexed ("i:").
func managedItems(managed map[string]any) int {
	n := 0
	for f := range managed {
		if strings.HasPrefix(f, "k:") || strings.HasPrefix(f, "v:") || strings.HasPrefix(f, "i:") {
			n++
		}
	}
	return n
}

// itemManaged finds the managed fields of one list item: by its key fields ("k:{...}") or index.
func itemManaged(managed map[string]any, item any, i int) map[string]any {
	if sub, ok := managed[fmt.Sprintf("i:%d", i)].(map[string]any); ok {
		return sub
	}
	m, ok := item.(map[string]any)
	if !ok {
		return nil
	}
	for f, sub := range managed {
		var keys map[string]any
		if k, isKey := strings.CutPrefix(f, "k:"); isKey && json.Unmarshal([]byte(k), &keys) == nil && matchesKeys(m, keys) {
			s, _ := sub.(map[string]any)
			return s
		}
	}
	return nil
}

func matchesKeys(item, keys map[string]any) bool {
	for k, v := range keys {
		if !sameScalar(v, item[k]) {
			return false
		}
	}
	return len(keys) > 0
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
	n, ok := number(v)
	return ok && n == 0
}

// sameScalar compares scalars as the server stores them: numbers by value, and two values that
// both read as quantities by quantity.
func sameScalar(desired, observed any) bool {
	if reflect.DeepEqual(desired, observed) {
		return true
	}
	if dn, ok := number(desired); ok {
		if on, ok := number(observed); ok {
			return dn == on
		}
	}
	if _, isString := observed.(string); !isString {
		return false // the server turns a quantity into a string, never a string into a number
	}
	dq, ok1 := quantity(desired)
	oq, ok2 := quantity(observed)
	return ok1 && ok2 && dq.Cmp(oq) == 0
}

func quantity(v any) (resource.Quantity, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	default:
		n, ok := number(v)
		if !ok {
			return resource.Quantity{}, false
		}
		s = strconv.FormatFloat(n, 'f', -1, 64)
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
