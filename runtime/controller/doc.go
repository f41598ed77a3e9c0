// Package controller runs one policy as a Kubernetes controller.
//
// Informers are shared (package informers): a controller reads its parents and children through
// the pool's caches, and a sync decodes the parent and children it reads. Children are watched
// through the label app.kubernetes.io/managed-by=metacel only, and indexed by their parent's
// UID, so finding a parent's children never scans all objects; parents are indexed by their own
// UID, to route a child's events.
//
// The types, each in its own file, and what they hold. Controller wires the others in New; none
// of them knows the Controller, so each reads on its own:
//   - Controller (controller.go): the loop only, configured once through Options in New: the
//     queue, its workers and the event handlers that route events to parents, and the operator's
//     calls (SetShare, TakeAll, FollowSlots, FinishRecreates, Parents, Memory);
//   - caches (caches.go): the caches of the parents and of the child resources, and the children
//     created lately (recentcreates.go: client-go's MutationCache does not fit, the file says
//     why); sharding (slots.go) moves them between shard slots; the wait for them to sync
//     (cachesync.go);
//   - syncer and parentSync (sync.go): what every sync uses, and one sync of one parent, what it
//     read and decoded, whose methods are its steps;
//   - childWriter (childwriter.go): carries out decide's steps against the API server, with the
//     guards around them (refused writes, fights, recent creates, Recreates under way, the pace
//     of bookkeeping patches): creating, updating, recreating or removing one child reads there;
//   - cleanup (finalize.go, leftwithfinalizer.go, droppedresources.go): the
//     cleanup finalizer, the record of unowned children, the deletion of a deleted parent's
//     children in the reverse of the order they are applied in (decide.Removals; the deadline
//     past which the parent says which child holds it up, DeletionBlocked), parents that left the
//     labelSelector, children of dropped resources;
//   - reporter (status.go): the parent's status, conditions and failure events;
//   - relatedWatch (related.go): the related objects' and namespaces' informers, and which parent
//     read which object;
//   - access (access.go): the checks of a policy's reads as the identity it acts as;
//   - parentStates (parentstate.go, with the value of each memory; its methods in the files of
//     each memory): what the controller remembers of each parent between syncs;
//   - share, Parents (share.go): the parents the controller syncs, and what the operator reads of
//     them; Memory (memo.go): the memo of its parents' last syncs; drain (recreatesunderway.go):
//     the Recreates a removed policy completes.
//
// One error type, syncError (errors.go), carries a failure's reason (what its Synced condition
// reports) and whether it is terminal (controller-runtime's reconcile.TerminalError): a terminal
// failure waits for an input to change; an error without one is retried with backoff.
//
// Each policy has its own rate-limited workqueue of parent keys and its own workers. Events route
// to parents: a parent's own events, a child's through its metacel.dev/parent-uid label, a related
// object's through a reverse index of what each parent read in its last sync. The workqueue hands
// out first what changed: a resync, a relist's unchanged objects and a re-sync of every parent
// (resyncAll) ask at low priority (package priorityqueue), so an edit waits for none of them. The
// informers' first lists stay high: a new version's controller re-renders every parent from
// them, and its own writes' events must not go first.
//
// The sync of one parent reads as a list of steps (sync.go): read the parent from the cache,
// read its related objects and observed children, render (the pure function shared with
// `metacel render`), make sure of the finalizer, carry out what package decide says the sync
// writes (create, apply or recreate the children that differ, delete or release those no longer
// desired: the decision `render`, `test` and `plan` show offline), record on the parent the
// children garbage collection does not remove with it (render.ChildRecord), render the status again with
// the children as the API server returned them (decide.AfterWrites), and write it only if it
// changed. A converged parent costs
// no write at all, and a sync whose inputs are at the resourceVersions of the last successful
// one (a resync) not even a render: read from the caches' metadata, nothing is decoded
// (inputs.go). Render errors are permanent for the parent's current inputs and are not
// retried (an input change re-syncs the parent); API errors are retried with backoff.
//
// A controller may hold a share of its policy's parents only (SetShare, share.go): during a
// rollout, package operator runs two versions of one policy side by side, each on its share, and
// moves parents from one to the other. It counts, for the policy's status, the parents it holds
// and their conditions as its syncs last computed them (Parents().Count), without decoding any,
// and reading them again only after a parent's event, a sync's new conditions or a new share.
//
// What a controller remembers of a parent between its syncs (the inputs of its last sync, its
// conditions, the writes refused or undone, the Recreates under way) is one record, parentState
// (parentstate.go), forgotten with one delete when the parent is gone.
//
// With sharding (Options.Sharded, slots.go), a controller syncs the parents of the slots its
// replica holds (package shard): one informer per slot for each child resource (the children's
// metacel.dev/shard-slot label) and, when the API server selects shards, for the parents, read as
// one cache; without, one informer holds every parent. Letting go of slots waits for their syncs under way; slots gained are synced once
// their informers have listed.
package controller
