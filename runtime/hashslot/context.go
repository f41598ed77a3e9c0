package hashslot

import "context"

// slotKey is the key of the slot a context's writes are for.
type slotKey struct{}

// WithSlot returns ctx saying that the requests made with it write for a parent of slot: a
// replica's write fence lets them through only while Allows(slot).
func WithSlot(ctx context.Context, slot int) context.Context {
	return context.WithValue(ctx, slotKey{}, slot)
}

// SlotFrom returns the slot WithSlot put in ctx, if any.
func SlotFrom(ctx context.Context) (int, bool) {
	slot, ok := ctx.Value(slotKey{}).(int)
	return slot, ok
}
