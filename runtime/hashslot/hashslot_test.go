package hashslot

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/sharding"
)

// uids returns n UIDs shaped like the API server's: random UUIDs, from a fixed seed.
func uids(n int) []types.UID {
	rnd := rand.New(rand.NewPCG(1, 2))
	out := make([]types.UID, n)
	for i := range out {
		out[i] = types.UID(fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", rnd.Uint32(), rnd.Uint32()>>16, rnd.Uint32()>>20, rnd.Uint32()>>16, rnd.Uint64()>>16))
	}
	return out
}

func TestHashIsTheAPIServersFNV1aOfTheUID(t *testing.T) {
	for _, uid := range append(uids(100), "", "a", "a9c7da18-d1e2-47c8-9f65-7a57d1d22461") {
		h := fnv.New64a()
		h.Write([]byte(uid))
		if got, want := Hash(uid), h.Sum64(); got != want {
			t.Errorf("Hash(%q) = %x, want %x (hash/fnv)", uid, got, want)
		}
		if got, want := fmt.Sprintf("%016x", Hash(uid)), apisharding.HashField(string(uid)); got != want {
			t.Errorf("Hash(%q) = %s, want %s (apimachinery sharding.HashField)", uid, got, want)
		}
	}
}

func TestSlotOf(t *testing.T) {
	cases := []struct {
		name string
		uid  types.UID
		want int
	}{
		// FNV-1a of "" is its offset basis 0xcbf29ce484222325: 0xcb >> 2 = 50.
		{"the empty UID is in the slot of the offset basis", "", 50},
		// FNV-1a("a") = 0xaf63dc4c8601ec8c: 0xaf >> 2 = 43.
		{"a one-byte UID", "a", 43},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Of(c.uid); got != c.want {
				t.Errorf("Of(%q) = %d, want %d", c.uid, got, c.want)
			}
		})
	}
}

func TestSelector(t *testing.T) {
	cases := []struct {
		name string
		r    Range
		want string
	}{
		{"the first half", Range{0, 32}, "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"},
		{"the second half ends at 2^64", Range{32, Count}, "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"},
		{"one slot", Range{1, 2}, "shardRange(object.metadata.uid, '0x0400000000000000', '0x0800000000000000')"},
		{"everything", Range{0, Count}, "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.Selector(); got != c.want {
				t.Errorf("Selector() = %s\nwant         %s", got, c.want)
			}
		})
	}
}

// The API server's own parser and matcher (k8s.io/apiserver/pkg/sharding) accept every range's
// selector and select exactly the UIDs Contains says.
func TestTheAPIServerSelectsWhatContainsSays(t *testing.T) {
	ranges := []Range{{0, Count}, {0, 1}, {63, 64}, {0, 32}, {32, 64}, {5, 17}, {21, 43}}
	for i := range Count {
		ranges = append(ranges, Range{i, i + 1})
	}
	all := uids(500)
	for _, r := range ranges {
		sel, err := sharding.Parse(r.Selector())
		if err != nil {
			t.Fatalf("the API server refuses %s: %v", r.Selector(), err)
		}
		for _, uid := range all {
			obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: uid}}
			got, err := sel.Matches(obj)
			if err != nil {
				t.Fatal(err)
			}
			if want := r.Contains(uid); got != want {
				t.Errorf("%s on %s (slot %d): the API server says %v, Contains %v", r.Selector(), uid, Of(uid), got, want)
			}
		}
	}
}

func TestContains(t *testing.T) {
	uid := types.UID("a") // slot 43
	cases := []struct {
		name string
		r    Range
		want bool
	}{
		{"its own slot", Range{43, 44}, true},
		{"a range starting at its slot", Range{43, Count}, true},
		{"a range ending at its slot (exclusive)", Range{0, 43}, false},
		{"everything", Range{0, Count}, true},
		{"an empty range", Range{43, 43}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.Contains(uid); got != c.want {
				t.Errorf("%+v.Contains(slot 43) = %v, want %v", c.r, got, c.want)
			}
		})
	}
}

func TestSet(t *testing.T) {
	cases := []struct {
		name   string
		set    Set
		count  int
		ranges []Range
		str    string
	}{
		{"empty", SetOf(), 0, nil, ""},
		{"an empty range adds nothing", SetOf(Range{3, 3}), 0, nil, ""},
		{"everything", SetOf(Range{0, Count}), Count, []Range{{0, Count}}, "0-63"},
		{"two runs", SetOf(Range{0, 21}, Range{43, 64}), 42, []Range{{0, 21}, {43, 64}}, "0-20,43-63"},
		{"adjacent ranges make one run", SetOf(Range{0, 5}, Range{5, 10}), 10, []Range{{0, 10}}, "0-9"},
		{"overlapping ranges make one run", SetOf(Range{0, 6}, Range{4, 10}), 10, []Range{{0, 10}}, "0-9"},
		{"a run of one slot", SetOf(Range{5, 6}, Range{63, 64}), 2, []Range{{5, 6}, {63, 64}}, "5,63"},
		{"ranges outside the slots are clipped", SetOf(Range{-3, 2}, Range{62, 70}), 4, []Range{{0, 2}, {62, 64}}, "0-1,62-63"},
		{"bits", Set(0b1011), 3, []Range{{0, 2}, {3, 4}}, "0-1,3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.set.Count(); got != c.count {
				t.Errorf("Count() = %d, want %d", got, c.count)
			}
			if got := c.set.Ranges(); !reflect.DeepEqual(got, c.ranges) {
				t.Errorf("Ranges() = %v, want %v", got, c.ranges)
			}
			if got := c.set.String(); got != c.str {
				t.Errorf("String() = %q, want %q", got, c.str)
			}
			if got := SetOf(c.set.Ranges()...); got != c.set {
				t.Errorf("SetOf(Ranges()) = %b, want %b", got, c.set)
			}
		})
	}
}

func TestSetHas(t *testing.T) {
	s := SetOf(Range{0, 1}, Range{10, 12}, Range{63, 64})
	cases := []struct {
		slot int
		want bool
	}{
		{0, true}, {1, false}, {9, false}, {10, true}, {11, true}, {12, false}, {63, true},
		{-1, false}, {64, false},
	}
	for _, c := range cases {
		t.Run("slot "+strconv.Itoa(c.slot), func(t *testing.T) {
			if got := s.Has(c.slot); got != c.want {
				t.Errorf("Has(%d) = %v, want %v", c.slot, got, c.want)
			}
		})
	}
}

// Every UID is in exactly one single-slot range.
func TestTheSingleSlotRangesPartitionTheUIDs(t *testing.T) {
	for _, uid := range uids(1000) {
		in := 0
		for i := range Count {
			if (Range{i, i + 1}).Contains(uid) {
				in++
			}
		}
		if in != 1 {
			t.Errorf("%s is in %d single-slot ranges, want 1", uid, in)
		}
	}
}

func TestWithSlotOfSaysTheSlotAndWhetherTheSetHoldsIt(t *testing.T) {
	uid := uids(1)[0]
	slot := Of(uid)
	cases := []struct {
		name string
		set  Set
		want bool
	}{
		{"the set holds the slot", SetOf(Range{slot, slot + 1}), true},
		{"the set holds every slot", SetOf(Range{0, Count}), true},
		{"the set holds the other slots", SetOf(Range{0, Count}) &^ SetOf(Range{slot, slot + 1}), false},
		{"the set is empty", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, held := c.set.WithSlotOf(t.Context(), uid)
			if held != c.want {
				t.Errorf("held = %v, want %v", held, c.want)
			}
			if got, ok := SlotFrom(ctx); !ok || got != slot {
				t.Errorf("SlotFrom = %d, %v, want %d, true", got, ok, slot)
			}
		})
	}
}
