// Package decide is what one sync of a parent writes, and the status that follows, decided from
// what the policy renders and what the sync observed. It is the one decision that the runtime
// (package controller) carries out against the API server and that `metacel render`, `metacel
// test` and `metacel plan` show offline (packages preview, policytest and plan), so that offline
// and cluster cannot disagree. It is pure: no client, no cache, no clock.
//
// Writes lists the steps: conflicts (an object someone else owns holds a desired child's name;
// only an offline sync is given such objects, the runtime meets them when a create is refused),
// then each desired child in the policy's order (created when missing, left alone when up to
// date or OnDelete, recreated when it differs and its resource is Recreate, applied in place
// otherwise, its metadata patched when only metacel's own bookkeeping differs (UpdateBookkeeping,
// for every update strategy: a runtime that adds or renames a label or annotation never
// recreates a child), awaited when it is being deleted; refused, failing the sync with ApplyFailed as the
// API server would, when an in-place update changes a field its kind does not let change: the
// built-in kinds' known immutable fields, a CRD field with the rule self == oldSelf), then the
// children no longer desired (deleted, or
// released by their deletion policy), in the reverse of the order children are applied in
// (Removals): one that a child going away too reads, or names in its dependsOn, waits (Wait)
// until that child is gone, and the sync its deletion causes deletes the next; the runtime
// deletes a deleted parent's children in the same order (Ordered says whether a policy's
// children have one). AfterWrites renders the status again with the children as the
// writes left them (the runtime: as the API server returned them; offline: as Written says the
// API server would), so a child just created or changed counts at once.
package decide
