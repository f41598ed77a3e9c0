package compact

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// metadataMap is the object's metadata as the API server's JSON of it decodes to (unmarshalObject),
// built from ObjectMeta field by field, as encoding/json writes each (omitempty and omitzero,
// a time as RFC 3339 in UTC): a third of the cost of encoding the
// metadata and decoding that JSON, which a sync paid at each read of a cached JSON object
// (TestMetadataMapIsTheJSONOfTheMetadata holds the two to one result).
func (o *Object) metadataMap() (map[string]any, error) {
	m := &o.heldMeta
	out := make(map[string]any, 12)
	putString(out, "name", m.name)
	putString(out, "generateName", m.GetGenerateName())
	putString(out, "namespace", m.namespace)
	putString(out, "uid", string(m.uid))
	putString(out, "resourceVersion", m.resourceVersion)
	if m.generation != 0 {
		out["generation"] = m.generation
	}
	if m.created != 0 {
		out["creationTimestamp"] = timeValue(m.GetCreationTimestamp())
	}
	if m.deleted != nil {
		out["deletionTimestamp"] = timeValue(*m.deleted)
	}
	if grace := m.GetDeletionGracePeriodSeconds(); grace != nil {
		out["deletionGracePeriodSeconds"] = *grace
	}
	putPairs(out, "labels", m.labelNames().expand(m.labels))
	putPairs(out, "annotations", m.annotations())
	if len(m.ownerReferences) > 0 {
		refs := make([]any, len(m.ownerReferences))
		for i, r := range m.ownerReferences {
			refs[i] = ownerReferenceMap(r)
		}
		out["ownerReferences"] = refs
	}
	if fins := m.finalizers(); len(fins) > 0 {
		finalizers := make([]any, len(fins))
		for i, f := range fins {
			finalizers[i] = f
		}
		out["finalizers"] = finalizers
	}
	if len(o.managed) > 0 {
		entries, err := managedFieldsMaps(managedFields(o.managed, m.ownerReferences))
		if err != nil {
			return nil, err
		}
		out["managedFields"] = entries
	}
	return out, nil
}

func ownerReferenceMap(r metav1.OwnerReference) map[string]any {
	out := map[string]any{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name, "uid": string(r.UID)}
	if r.Controller != nil {
		out["controller"] = *r.Controller
	}
	if r.BlockOwnerDeletion != nil {
		out["blockOwnerDeletion"] = *r.BlockOwnerDeletion
	}
	return out
}

func managedFieldsMaps(entries []metav1.ManagedFieldsEntry) ([]any, error) {
	out := make([]any, len(entries))
	for i, e := range entries {
		m := make(map[string]any, 7)
		putString(m, "manager", e.Manager)
		putString(m, "operation", string(e.Operation))
		putString(m, "apiVersion", e.APIVersion)
		if e.Time != nil {
			m["time"] = timeValue(*e.Time)
		}
		putString(m, "fieldsType", e.FieldsType)
		if e.FieldsV1 != nil {
			fields, err := unmarshalObject(e.FieldsV1.GetRawBytes())
			if err != nil {
				return nil, err
			}
			m["fieldsV1"] = fields
		}
		putString(m, "subresource", e.Subresource)
		out[i] = m
	}
	return out, nil
}

// timeValue is a time as its JSON decodes to: nil for the zero time.
func timeValue(t metav1.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05Z07:00")
}

func putString(m map[string]any, key, value string) {
	if value != "" {
		m[key] = value
	}
}

// putPairs sets key to the object of pairs, keys and values in turn, unless there are none.
func putPairs(m map[string]any, key string, pairs pairs) {
	if len(pairs) == 0 {
		return
	}
	out := make(map[string]any, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	m[key] = out
}
