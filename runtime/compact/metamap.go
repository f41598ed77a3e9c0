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
	m := o.objectMetaButAnnotations()
	out := make(map[string]any, 12)
	putString(out, "name", m.Name)
	putString(out, "generateName", m.GenerateName)
	putString(out, "namespace", m.Namespace)
	putString(out, "uid", string(m.UID))
	putString(out, "resourceVersion", m.ResourceVersion)
	if m.Generation != 0 {
		out["generation"] = m.Generation
	}
	if !m.CreationTimestamp.IsZero() {
		out["creationTimestamp"] = timeValue(m.CreationTimestamp)
	}
	if m.DeletionTimestamp != nil {
		out["deletionTimestamp"] = timeValue(*m.DeletionTimestamp)
	}
	if m.DeletionGracePeriodSeconds != nil {
		out["deletionGracePeriodSeconds"] = *m.DeletionGracePeriodSeconds
	}
	putStringMap(out, "labels", m.Labels)
	putPairs(out, "annotations", o.annotations)
	if len(m.OwnerReferences) > 0 {
		refs := make([]any, len(m.OwnerReferences))
		for i, r := range m.OwnerReferences {
			refs[i] = ownerReferenceMap(r)
		}
		out["ownerReferences"] = refs
	}
	if len(m.Finalizers) > 0 {
		finalizers := make([]any, len(m.Finalizers))
		for i, f := range m.Finalizers {
			finalizers[i] = f
		}
		out["finalizers"] = finalizers
	}
	if len(o.managed) > 0 {
		entries, err := managedFieldsMaps(managedFields(o.managed, m.OwnerReferences))
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
func putPairs(m map[string]any, key string, pairs annotationPairs) {
	if len(pairs) == 0 {
		return
	}
	out := make(map[string]any, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	m[key] = out
}

func putStringMap(m map[string]any, key string, value map[string]string) {
	if len(value) == 0 {
		return
	}
	out := make(map[string]any, len(value))
	for k, v := range value {
		out[k] = v
	}
	m[key] = out
}
