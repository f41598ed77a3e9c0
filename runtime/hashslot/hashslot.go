package hashslot

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
)

// Count is the number of equal slots the 64-bit hash space is cut into: an object is in slot
// Hash(uid) >> 58.
const Count = 64

// slotShift is log2(2^64 / Count): shifting a hash right by it gives its slot.
const slotShift = 64 - 6

// FNV-1a, 64-bit (hash/fnv's New64a, without its allocation).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// Hash is the 64-bit FNV-1a hash of the UID string: the value the API server's
// shardRange(object.metadata.uid, ...) selects on (k8s.io/apimachinery/pkg/sharding.HashField).
func Hash(uid types.UID) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(uid); i++ {
		h ^= uint64(uid[i])
		h *= fnvPrime64
	}
	return h
}

// Of returns the slot, in [0, Count), of the object with this UID.
func Of(uid types.UID) int {
	return int(Hash(uid) >> slotShift)
}

// Range is the slots [From, To), 0 <= From < To <= Count.
type Range struct{ From, To int }

// Selector returns the shard selector (metav1.ListOptions.ShardSelector) that lists and watches
// the objects whose UID hashes into r, as k8s.io/apimachinery/pkg/sharding writes it:
//
//	shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
//
// The API server wants bounds of exactly 16 lowercase hex digits, the top one (2^64) excepted,
// and From < To: the selector of an empty range is refused.
func (r Range) Selector() string {
	return sharding.NewSelector(sharding.ShardRangeRequirement{Key: uidField, Start: bound(r.From), End: bound(r.To)}).String()
}

// uidField is the field the slots hash.
const uidField = "object.metadata.uid"

// bound is the hash where a slot starts, as the API server reads it; Count is the end of the
// space, 2^64.
func bound(slot int) string {
	if slot >= Count {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", uint64(slot)<<slotShift)
}

// Contains reports whether the object with this UID is in r: what the API server answers to
// r.Selector().
func (r Range) Contains(uid types.UID) bool {
	s := Of(uid)
	return r.From <= s && s < r.To
}

// Set is a set of slots: bit i is slot i.
type Set uint64

// SetOf returns the set of the slots of the ranges (clipped to [0, Count)).
func SetOf(r ...Range) Set {
	var s Set
	for _, rg := range r {
		for i := max(rg.From, 0); i < min(rg.To, Count); i++ {
			s |= 1 << i
		}
	}
	return s
}

// Has reports whether slot is in s.
func (s Set) Has(slot int) bool {
	return slot >= 0 && slot < Count && s&(1<<slot) != 0
}

// Count returns the number of slots in s.
func (s Set) Count() int {
	return bits.OnesCount64(uint64(s))
}

// Ranges returns the maximal runs of contiguous slots of s, in order.
func (s Set) Ranges() []Range {
	var out []Range
	for i := 0; i < Count; {
		if !s.Has(i) {
			i++
			continue
		}
		from := i
		for i < Count && s.Has(i) {
			i++
		}
		out = append(out, Range{From: from, To: i})
	}
	return out
}

// String lists the runs of s with inclusive slot numbers, "0-20,43-63" ("5" for a run of one
// slot, "" for the empty set).
func (s Set) String() string {
	parts := make([]string, 0, Count/2)
	for _, r := range s.Ranges() {
		if r.To-r.From == 1 {
			parts = append(parts, strconv.Itoa(r.From))
			continue
		}
		parts = append(parts, strconv.Itoa(r.From)+"-"+strconv.Itoa(r.To-1))
	}
	return strings.Join(parts, ",")
}

// ParseSet reads what Set.String writes.
func ParseSet(s string) (Set, error) {
	var out Set
	if s == "" {
		return 0, nil
	}
	for _, part := range strings.Split(s, ",") {
		from, to, isRun := strings.Cut(part, "-")
		if !isRun {
			to = from
		}
		a, errA := strconv.Atoi(from)
		b, errB := strconv.Atoi(to)
		if errA != nil || errB != nil || a < 0 || b < a || b >= Count {
			return 0, fmt.Errorf("slots %q: %q is not a slot or a run of slots (e.g. 0-20) in [0, %d)", s, part, Count)
		}
		out |= SetOf(Range{From: a, To: b + 1})
	}
	return out, nil
}
