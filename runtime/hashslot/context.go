package hashslot

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
)

// slotKey is the key of the slot a context's writes are for.
type slotKey struct{}

// WithSlot returns ctx saying that the requests made with it write for a parent of slot: a
// replica's write fence lets them through only while Allows(slot).
func WithSlot(ctx context.Context, slot int) context.Context {
	return context.WithValue(ctx, slotKey{}, slot)
}

// WithSlotOf returns ctx saying that the requests made with it write for the object of this UID
// (WithSlot of its slot), and whether s holds that slot: a replica holding s syncs the object
// only then.
func (s Set) WithSlotOf(ctx context.Context, uid types.UID) (context.Context, bool) {
	slot := Of(uid)
	return WithSlot(ctx, slot), s.Has(slot)
}

// SlotFrom returns the slot WithSlot put in ctx, if any.
func SlotFrom(ctx context.Context) (int, bool) {
	slot, ok := ctx.Value(slotKey{}).(int)
	return slot, ok
}
