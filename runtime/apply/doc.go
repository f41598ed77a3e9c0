// Package apply writes to the API server: children by server-side apply with metacel's field
// manager (or a create, moved to an apply entry by UpgradeToApply), deletion with a UID
// precondition, release of orphaned children, metadata patches, and a parent's status and
// finalizer. It also says who wrote an object, from its managed fields: whether metacel applied
// or created it (AppliedBy, CreatedNotApplied), the fields it applied (ManagedBy), metacel's share
// of a parent's status (OwnedStatus). Whether a write is needed at all is not decided here: that
// is the no-op check of package decide/noop, which reads ManagedBy.
//
// Nothing here writes back an object read from an informer's cache: what is sent is the desired
// object, built fresh by render.
package apply
