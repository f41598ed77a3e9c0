package compact

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// The objects a cache holds are mostly alike: a policy's children come from one template and
// differ by the names of their parent and of themselves (a MyApp's Pod has a container named after
// the MyApp), and the parents of one policy often differ in little but their names and the
// seconds their conditions changed at. Held one body per object, the 100,000 Pods of the
// benchmark held 100,000 copies of one container, and their MyApps 100,000 statuses of which a
// few hundred differ.
//
// So a cached JSON body holds the object's own name and its controlling owner's name as markers
// (control characters, which JSON never holds unescaped, so that expanding them gives back the
// bytes the API server sent), and the bodies equal once marked are held once: the table shared keeps
// the last body it saw in each of its slots, and a body equal to the one its slot holds is
// replaced by it. A body no other object has costs nothing but the slot it may hold for a while
// (Go's unique package costs about 200 bytes an entry, more than most bodies it would save). A
// built-in object's protobuf body is held as JSON when that JSON is shared: its decode then needs
// no protobuf message decoded and encoded again; an object alike no other keeps its message,
// smaller than its JSON.

// ownNameMarker stands for the object's own name in its body, ownerNameMarker (managed.go) for
// its controlling owner's.
const ownNameMarker = "\x02"

const (
	// sharedSlots is the number of bodies held for sharing. A template's objects share the slot of
	// their body; two bodies in one slot take turns, each still shared between its turns.
	sharedSlots = 1024
	// sharedAtMost is the size of the largest body shared: sharing saves little of a larger one,
	// and a slot pins what it holds (at most sharedSlots × sharedAtMost, 2 MiB).
	sharedAtMost = 2048
)

// sharedTable holds, in each slot, the last value of the slot's hash that it saw: the bodies
// of objects alike (shared), their labels (sharedLabels, sharedlabels.go).
type sharedTable[T any] struct {
	seed  maphash.Seed
	slots [sharedSlots]atomic.Pointer[T]
	hash  func(maphash.Seed, T) uint64
	equal func(a, b T) bool
}

func newSharedTable[T any](hash func(maphash.Seed, T) uint64, equal func(a, b T) bool) *sharedTable[T] {
	return &sharedTable[T]{seed: maphash.MakeSeed(), hash: hash, equal: equal}
}

var shared = newSharedTable(maphash.Bytes, bytes.Equal)

// lookup returns the value held equal to v, and whether there is one.
func (s *sharedTable[T]) lookup(v T) (held T, ok bool) {
	if h := s.slot(v).Load(); h != nil && s.equal(*h, v) {
		return *h, true
	}
	return held, false
}

// hold keeps v in its slot, in place of what it held.
func (s *sharedTable[T]) hold(v T) { s.slot(v).Store(&v) }

func (s *sharedTable[T]) slot(v T) *atomic.Pointer[T] {
	return &s.slots[s.hash(s.seed, v)%sharedSlots]
}

// Shared returns the object with its body held as the objects alike hold it: a JSON body with the
// names marked, the body of an object alike when there is one; a protobuf one as that JSON when
// it is shared. An object whose body was not kept, or is larger than sharedAtMost, is returned
// as it is.
func (o *Object) Shared() *Object {
	if o.Raw == nil || len(o.Raw) > sharedAtMost || o.fetches() || o.bodyOmitted() {
		return o
	}
	own, owner := o.markedNames()
	out := *o
	if !o.Protobuf {
		body := markNames(o.Raw, own, owner)
		held, ok := shared.lookup(body)
		if !ok {
			shared.hold(body)
			held = body
		}
		out.Raw = held
		return &out
	}
	asJSON, ok := o.protobufBodyAsJSON()
	if !ok {
		return o
	}
	body := markNames(asJSON, own, owner)
	held, ok := shared.lookup(body)
	if !ok {
		shared.hold(body) // the next object alike shares it
		return o
	}
	out.Raw, out.Protobuf = held, false
	return &out
}

// protobufBodyAsJSON is a protobuf body as the JSON body the API server would have sent: decoded
// into client-go's type, encoded as JSON, without the metadata (held apart) nor the type (empty
// in the message).
func (o *Object) protobufBodyAsJSON() ([]byte, bool) {
	typed, err := scheme.Scheme.New(o.GroupVersionKind())
	if err != nil {
		return nil, false
	}
	u, ok := typed.(unmarshaler)
	if !ok || u.Unmarshal(o.Raw) != nil {
		return nil, false
	}
	data, err := json.Marshal(typed)
	if err != nil {
		return nil, false
	}
	var body [][2][]byte
	size := 2
	err = eachRawField(data, func(rawKey []byte, key string, value []byte) error {
		if key != "metadata" && key != "kind" && key != "apiVersion" {
			body = append(body, [2][]byte{rawKey, value})
			size += len(rawKey) + len(value) + 2
		}
		return nil
	})
	if err != nil {
		return nil, false
	}
	return jsonObject(make([]byte, 0, size), body), true
}

// markNames returns a JSON body with the names in it replaced by their markers, the longer name
// first; body itself when it holds neither, or holds a marker already (not JSON as the API server
// writes it: it could not be expanded back).
func markNames(body []byte, own, owner string) []byte {
	if hasMarker(body) {
		return body
	}
	names := [2][2]string{{own, ownNameMarker}, {owner, ownerNameMarker}}
	if len(owner) > len(own) {
		names[0], names[1] = names[1], names[0]
	}
	out := body
	for _, n := range names {
		if n[0] != "" && bytes.Contains(out, []byte(n[0])) {
			out = bytes.ReplaceAll(out, []byte(n[0]), []byte(n[1]))
		}
	}
	return out
}

// expandNames returns a body with its markers replaced by the names they stand for; body itself
// when it holds none.
func expandNames(body []byte, own, owner string) []byte {
	if !hasMarker(body) {
		return body
	}
	out := bytes.ReplaceAll(body, []byte(ownNameMarker), []byte(own))
	return bytes.ReplaceAll(out, []byte(ownerNameMarker), []byte(owner))
}

// hasMarker reports whether data holds a marker's character.
func hasMarker(data []byte) bool {
	return bytes.IndexByte(data, ownNameMarker[0]) >= 0 || bytes.IndexByte(data, ownerNameMarker[0]) >= 0
}

// body is the object's JSON body as the API server sent it (its names expanded).
func (o *Object) body() []byte {
	if o.Protobuf {
		return o.Raw
	}
	own, owner := o.markedNames()
	return expandNames(o.Raw, own, owner)
}

// markedNames are the names a body marks: the object's own, its controlling owner's ("" for none).
func (o *Object) markedNames() (own, owner string) {
	if c := controllingOwner(o.ownerReferences); c != nil {
		owner = c.Name
	}
	return o.name, owner
}

// SetName implements metav1.Object: the body's marked names are expanded first, so that they
// stay the names the API server sent (an object renamed is a copy, not the one cached).
func (o *Object) SetName(name string) {
	o.Raw = o.body()
	o.heldMeta.SetName(name)
}

// SetOwnerReferences implements metav1.Object, the body's marked names expanded first (SetName).
func (o *Object) SetOwnerReferences(refs []metav1.OwnerReference) {
	o.Raw = o.body()
	o.heldMeta.SetOwnerReferences(refs)
}
