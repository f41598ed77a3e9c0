package apply

import (
	"encoding/json"
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// NeedsApply reports whether applying desired would change observed: a field metacel sets differs,
// or a field metacel set before is no longer desired (it would be removed). Observed's managed
// fields say what metacel set before.
func NeedsApply(desired, observed *unstructured.Unstructured) bool {
	return !satisfied(desired.Object, observed.Object, managedBy(observed, FieldManager))
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

// satisfied reports whether observed already holds every field of desired: each map key of
// desired is in observed with a satisfied value, and each list has the same length with each
// item satisfied. Fields that only observed has (defaults, status, fields other managers own) do
// not matter, unless managed (metacel's own fields, as "f:<key>") says metacel set them: a map
// key metacel set and no longer desires must be removed. Numbers compare by value.
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
				if isEmpty(dv) {
					continue // an empty value the server drops, e.g. env: []
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
		o, ok := observed.([]any)
		if !ok {
			return len(d) == 0 && observed == nil
		}
		if len(d) != len(o) {
			return false
		}
		for i := range d {
			if !satisfied(d[i], o[i], nil) {
				return false
			}
		}
		return true
	case nil:
		return observed == nil
	}
	if dn, ok := number(desired); ok {
		on, ok := number(observed)
		return ok && dn == on
	}
	return reflect.DeepEqual(desired, observed)
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
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
