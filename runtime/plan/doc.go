// Package plan previews a change of a policy against the live cluster, without writing: what
// `metacel plan` prints. For every live parent of the candidate version it says which children
// the runtime would create, update, recreate, delete or release, how the parent's status would
// change, and whether the API server would accept the writes.
//
// A plan is two offline syncs of each parent (runtime/preview, whose render is the runtime's own,
// render.RenderObserved) fed with the cluster's state as the runtime would read it: the parent,
// the related objects its entries name, and its observed children (the objects labelled with the
// policy's name and the parent's UID that metacel applied, of every child resource of either
// version and of the policy's ledger entry). One sync runs the version running now (found in the
// labelled ConfigMaps of the policy namespace), the other the candidate. What the runtime would
// write is decided by package decide, as the runtime decides it: a missing child is created; a
// child the no-op check (noop.Schema.NeedsApply) finds different is updated, or recreated under
// the Recreate strategy (preview's Changes); an OnDelete child is left alone; a child no longer
// desired, or of a resource the candidate dropped, is deleted or released by its deletionPolicy.
// Changed fields are listed as the difference between what the two versions desire, so that a
// reviewer sees the effect of the change, not the noise of the live objects.
//
// The API server then checks every write the candidate would make, with dry runs (dryRun=All,
// field manager "metacel"): a create (POST, as the runtime creates: an existing object of that
// name is a conflict, not taken over), a forced server-side apply for an update, and for a
// recreation a create under a generated name, since the child's own name is taken until the
// runtime deletes it. So admission, schema and quota errors show per parent before the change.
// A parent whose render or dry run fails is failing.
//
// Nothing here writes: the only requests are GET, LIST and dry runs.
package plan
