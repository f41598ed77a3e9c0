package compact

import (
	"bytes"
	"math"
	"strings"
	"time"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"metacel.dev/metacel/runtime/apply"
)

// A cached object's managed fields are most of its metadata, and most of those are metacel's own
// entry: the fields it applied, in which a child names its parent (the owner reference's UID) and
// often the parent's name (a container named after it). Held as the API server sent them, each
// child carried its own copy, about 600 bytes of a Pod. So a cache keeps the entries as
// managedEntry: its strings interned, the time as seconds, the fields (fieldsV1) of metacel's
// entries only (other managers' are dropped, as Slim drops them from a decoded object) and with
// the controlling owner's UID and name replaced by markers, so that every child of one policy's
// template holds one interned copy. Expanding the markers gives back the bytes the API server
// sent: a marker is a control character, which JSON never holds unescaped.

// managedEntry is a managed-fields entry as a cache holds it: 24 bytes (a flag of its own for
// no time took 8 more, in every entry of every object).
type managedEntry struct {
	writer unique.Handle[writer]
	// seconds is the entry's time (Unix seconds, as the API server keeps it); noTime: none
	seconds int64
	// fields is metacel's fieldsV1 with the owner's UID and name as markers; zero: not kept
	fields unique.Handle[string]
}

// writer is who wrote an entry's fields, and how: a handful of values in a cache, each interned
// once.
type writer struct {
	manager, operation, apiVersion, fieldsType, subresource string
}

// noTime is a managedEntry's seconds when the entry has no time: no entry is written at the
// least int64 second, where the Unix epoch (0) is a time.
const noTime = math.MinInt64

// Markers of the controlling owner's UID and name in metacel's fieldsV1.
const (
	ownerUIDMarker  = "\x00"
	ownerNameMarker = "\x01"
)

// compactManaged returns entries as a cache keeps them, with owners the object's owner references;
// nil when there are none.
func compactManaged(entries []metav1.ManagedFieldsEntry, owners []metav1.OwnerReference) []managedEntry {
	if len(entries) == 0 {
		return nil
	}
	owner := controllingOwner(owners)
	out := make([]managedEntry, len(entries))
	for i, e := range entries {
		out[i] = managedEntry{writer: unique.Make(writer{manager: e.Manager, operation: string(e.Operation), apiVersion: e.APIVersion,
			fieldsType: e.FieldsType, subresource: e.Subresource}), seconds: noTime}
		if e.Time != nil {
			out[i].seconds = e.Time.Unix()
		}
		if e.Manager == apply.FieldManager && e.FieldsV1 != nil {
			out[i].fields = unique.Make(fieldsTemplate(e.FieldsV1.GetRawBytes(), owner))
		}
	}
	return out
}

// managedFields returns the entries a cache keeps as the API server sent them, but for the fields
// of other managers than metacel.
func managedFields(entries []managedEntry, owners []metav1.OwnerReference) []metav1.ManagedFieldsEntry {
	if len(entries) == 0 {
		return nil
	}
	owner := controllingOwner(owners)
	out := make([]metav1.ManagedFieldsEntry, len(entries))
	for i, e := range entries {
		w := e.writer.Value()
		out[i] = metav1.ManagedFieldsEntry{Manager: w.manager, Operation: metav1.ManagedFieldsOperationType(w.operation),
			APIVersion: w.apiVersion, FieldsType: w.fieldsType, Subresource: w.subresource}
		if e.seconds != noTime {
			t := metav1.NewTime(time.Unix(e.seconds, 0))
			out[i].Time = &t
		}
		if e.fields != (unique.Handle[string]{}) {
			out[i].FieldsV1 = metav1.NewFieldsV1(expandFields(e.fields.Value(), owner))
		}
	}
	return out
}

// controllingOwner is the owner reference a child's fields name: its controller's, else its first.
func controllingOwner(owners []metav1.OwnerReference) *metav1.OwnerReference {
	for i := range owners {
		if c := owners[i].Controller; c != nil && *c {
			return &owners[i]
		}
	}
	if len(owners) > 0 {
		return &owners[0]
	}
	return nil
}

// fieldsTemplate is fieldsV1 with owner's UID, then its name, replaced by their markers.
func fieldsTemplate(fieldsV1 []byte, owner *metav1.OwnerReference) string {
	if owner == nil {
		return string(fieldsV1)
	}
	out := fieldsV1
	if owner.UID != "" {
		out = bytes.ReplaceAll(out, []byte(owner.UID), []byte(ownerUIDMarker))
	}
	if owner.Name != "" {
		out = bytes.ReplaceAll(out, []byte(owner.Name), []byte(ownerNameMarker))
	}
	return string(out)
}

// expandFields is fieldsTemplate undone.
func expandFields(template string, owner *metav1.OwnerReference) string {
	if owner == nil || !strings.ContainsAny(template, ownerUIDMarker+ownerNameMarker) {
		return template
	}
	return strings.NewReplacer(ownerUIDMarker, string(owner.UID), ownerNameMarker, owner.Name).Replace(template)
}
