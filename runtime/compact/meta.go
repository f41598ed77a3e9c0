package compact

import (
	"slices"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A cache holds an Object for every object it lists and watches, so the Object's own struct is
// a share of every object's memory: with metav1.TypeMeta and metav1.ObjectMeta embedded it took
// 376 bytes (Go's size class of 384), a quarter of a cached Pod. Much of it held what every
// object of a kind shares (its kind and apiVersion, 32 bytes) or what a cached object never has
// (ObjectMeta's selfLink, managedFields and annotations' map, which the cache holds apart;
// generateName and deletionGracePeriodSeconds, set on few objects). So heldType holds the type
// as one interned handle (package unique: one pointer), and is the schema.ObjectKind that
// GetObjectKind returns; heldMeta holds ObjectMeta's fields but those, the creation time as a
// number, the labels as a slice of keys and values that objects alike share (sharedlabels.go),
// the annotations and finalizers in one slice of strings (pairs.go), and the few objects' fields
// behind one pointer (uncommon): 240 bytes for the whole Object, a size class of its own
// (TestAnObjectTakesASizeClassOf240Bytes).
// The decoders still decode into an ObjectMeta, which setMeta packs; objectMeta builds one back.

// heldType is an object's kind and apiVersion as a cache holds them: one handle of the pair,
// which every object of the kind shares.
type heldType struct {
	typ unique.Handle[metav1.TypeMeta] // the zero Handle: no type
}

// heldMeta is an object's metadata as a cache holds it.
type heldMeta struct {
	name, namespace string
	uid             types.UID
	resourceVersion string
	generation      int64
	created         int64 // creationTimestamp in Unix nanoseconds; 0: none
	deleted         *metav1.Time
	// labels are keys and values in turn, sorted by key, a value naming the object or its
	// controlling owner held as a marker, so that objects alike share them (sharedlabels.go).
	// Never modified: a copy shares them, a set replaces them.
	labels pairs
	heldStrs
	ownerReferences []metav1.OwnerReference
	uncommon        *uncommon // nil when none of its fields is set
}

// uncommon holds what few cached objects have: the metadata's generateName and
// deletionGracePeriodSeconds, and what makes an object one cached without its body (omit.go).
type uncommon struct {
	generateName string
	gracePeriod  *int64
	// fetch reads the object from the API server when its body was not kept (omit.go)
	fetch Fetcher
	// bodyOmitted: the watch stream dropped its body (omitframe.go); a cache keeps it with Omit
	bodyOmitted bool
}

// setMeta packs m, its annotations included and its managed fields left out, into o; m's maps
// and slices become o's.
func (o *heldMeta) setMeta(m *metav1.ObjectMeta) {
	o.name, o.namespace, o.uid, o.resourceVersion = m.Name, m.Namespace, m.UID, m.ResourceVersion
	o.generation = m.Generation
	o.setCreated(m.CreationTimestamp)
	o.deleted = m.DeletionTimestamp
	o.ownerReferences = m.OwnerReferences
	o.setLabels(pairsOf(m.Labels))
	o.setStrs(pairsOf(m.Annotations), m.Finalizers)
	o.setGenerateName(m.GenerateName)
	o.setGracePeriod(m.DeletionGracePeriodSeconds)
}

// objectMeta is the metadata as an ObjectMeta, without the managed fields: a shallow copy, whose
// owner references and finalizers are the cache's, only to be read; its maps are its own.
func (o *heldMeta) objectMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: o.name, GenerateName: o.GetGenerateName(), Namespace: o.namespace, UID: o.uid,
		ResourceVersion: o.resourceVersion, Generation: o.generation,
		CreationTimestamp: o.GetCreationTimestamp(), DeletionTimestamp: o.deleted,
		DeletionGracePeriodSeconds: o.GetDeletionGracePeriodSeconds(),
		Labels:                     o.GetLabels(), Annotations: o.GetAnnotations(),
		OwnerReferences: o.ownerReferences, Finalizers: o.finalizers(),
	}
}

// deepCopy is a copy of o whose slices and pointers are its own, but its strings when it has no
// finalizers (GetFinalizers hands them out, to be changed in place; the pairs never are).
func (o *heldMeta) deepCopy() heldMeta {
	c := *o
	if o.ownerReferences != nil {
		c.ownerReferences = make([]metav1.OwnerReference, len(o.ownerReferences))
		for i := range o.ownerReferences {
			o.ownerReferences[i].DeepCopyInto(&c.ownerReferences[i])
		}
	}
	if len(o.finalizers()) > 0 {
		c.strs = slices.Clone(o.strs)
	}
	if o.deleted != nil {
		c.deleted = o.deleted.DeepCopy()
	}
	if o.uncommon != nil {
		u := *o.uncommon
		if u.gracePeriod != nil {
			u.gracePeriod = ptr.To(*u.gracePeriod)
		}
		c.uncommon = &u
	}
	return c
}

// the type: schema.ObjectKind, which GetObjectKind returns

// typeMeta is the object's kind and apiVersion.
func (o *heldType) typeMeta() metav1.TypeMeta {
	if o.typ == (unique.Handle[metav1.TypeMeta]{}) {
		return metav1.TypeMeta{}
	}
	return o.typ.Value()
}

func (o *heldType) setTypeMeta(t metav1.TypeMeta) { o.typ = unique.Make(t) }

// GroupVersionKind implements schema.ObjectKind.
func (o *heldType) GroupVersionKind() schema.GroupVersionKind {
	t := o.typeMeta()
	return t.GroupVersionKind()
}

// SetGroupVersionKind implements schema.ObjectKind.
func (o *heldType) SetGroupVersionKind(gvk schema.GroupVersionKind) {
	t := metav1.TypeMeta{}
	t.SetGroupVersionKind(gvk)
	o.setTypeMeta(t)
}

// kind is the object's kind, for messages.
func (o *heldType) kind() string { return o.typeMeta().Kind }

// the uncommon fields

func (o *heldMeta) uncommonFields() *uncommon {
	if o.uncommon == nil {
		o.uncommon = &uncommon{}
	}
	return o.uncommon
}

// the metadata: metav1.Object

func (o *heldMeta) GetNamespace() string          { return o.namespace }
func (o *heldMeta) SetNamespace(namespace string) { o.namespace = namespace }
func (o *heldMeta) GetName() string               { return o.name }
func (o *heldMeta) SetName(name string) {
	o.unmarkLabels() // they may name it
	o.name = name
}
func (o *heldMeta) GetUID() types.UID { return o.uid }
func (o *heldMeta) SetUID(uid types.UID) {
	o.unmarkLabels() // they may name it
	o.uid = uid
}
func (o *heldMeta) GetResourceVersion() string     { return o.resourceVersion }
func (o *heldMeta) SetResourceVersion(v string)    { o.resourceVersion = v }
func (o *heldMeta) GetGeneration() int64           { return o.generation }
func (o *heldMeta) SetGeneration(generation int64) { o.generation = generation }
func (o *heldMeta) GetSelfLink() string            { return "" }
func (o *heldMeta) SetSelfLink(string)             {} // deprecated: the API server sets none
func (o *heldMeta) GetFinalizers() []string        { return o.finalizers() }
func (o *heldMeta) SetFinalizers(finalizers []string) {
	o.setStrs(o.annotations(), finalizers)
}
func (o *heldMeta) GetOwnerReferences() []metav1.OwnerReference { return o.ownerReferences }
func (o *heldMeta) SetOwnerReferences(refs []metav1.OwnerReference) {
	o.unmarkLabels()
	o.ownerReferences = refs
}
func (o *heldMeta) GetDeletionTimestamp() *metav1.Time  { return o.deleted }
func (o *heldMeta) SetDeletionTimestamp(t *metav1.Time) { o.deleted = t }

// GetManagedFields implements metav1.Object: nil, as a cached object's ObjectMeta had them; a
// decode puts them back (managed.go).
func (o *heldMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }

// SetManagedFields implements metav1.Object: a cached object holds its managed fields apart,
// set only by its decoder.
func (o *heldMeta) SetManagedFields([]metav1.ManagedFieldsEntry) {}

func (o *heldMeta) GetCreationTimestamp() metav1.Time {
	if o.created == 0 {
		return metav1.Time{}
	}
	return metav1.NewTime(time.Unix(0, o.created))
}

func (o *heldMeta) SetCreationTimestamp(t metav1.Time) { o.setCreated(t) }

func (o *heldMeta) setCreated(t metav1.Time) {
	if t.IsZero() {
		o.created = 0
		return
	}
	o.created = t.UnixNano()
}

func (o *heldMeta) GetGenerateName() string {
	if o.uncommon == nil {
		return ""
	}
	return o.uncommon.generateName
}

func (o *heldMeta) SetGenerateName(name string) { o.setGenerateName(name) }

func (o *heldMeta) setGenerateName(name string) {
	if name != "" || o.uncommon != nil {
		o.uncommonFields().generateName = name
	}
}

func (o *heldMeta) GetDeletionGracePeriodSeconds() *int64 {
	if o.uncommon == nil {
		return nil
	}
	return o.uncommon.gracePeriod
}

func (o *heldMeta) SetDeletionGracePeriodSeconds(seconds *int64) { o.setGracePeriod(seconds) }

func (o *heldMeta) setGracePeriod(seconds *int64) {
	if seconds != nil || o.uncommon != nil {
		o.uncommonFields().gracePeriod = seconds
	}
}
