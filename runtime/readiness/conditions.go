package readiness

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// condition is the part of a status condition the rules read.
type condition struct {
	status, reason, message string
	observedGeneration      int64
}

// findCondition finds the condition of type t in obj's status.conditions.
func findCondition(obj *unstructured.Unstructured, t string) (condition, bool) {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok || m["type"] != t {
			continue
		}
		c := condition{}
		c.status, _ = m["status"].(string)
		c.reason, _ = m["reason"].(string)
		c.message, _ = m["message"].(string)
		c.observedGeneration = asInt64(m["observedGeneration"])
		return c, true
	}
	return condition{}, false
}

func hasConditions(obj *unstructured.Unstructured) bool {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	return len(list) > 0
}

// asInt64 reads an integer as JSON decoding gives it (int64) or as a test writes it (int, float64).
func asInt64(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int:
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0
}
