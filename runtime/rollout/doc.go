// Package rollout keeps, in the API server, which version of a policy serves its parents, and
// decides, step by step, when a new version reaches more of them.
//
// A policy that declares spec.rollout does not reach every parent at once when a new version
// loads: package operator runs both versions side by side, each controller on its share of the
// parents (a parent is on the new version at step s when policy.RolloutBucket of its UID is below
// the step's percent), and asks Decide, on every tick, whether the current step is done, must wait,
// or has failed. A failed rollout moves every parent back to the version that was stable.
//
// The Record is what a runtime that restarts (kill -9, a new leader) must know to go on where it
// was: which version was stable, with its source (the policy's ConfigMap holds only the newest),
// the version rolling out or rolled back, and the step with the time it started. It lives in a
// ConfigMap metacel-rollout-<policy> in the policy namespace, next to the policies: the runtime
// reads and writes ConfigMaps there already, a ConfigMap holds a policy's source (up to 1 MiB)
// where a Lease annotation would not, and it carries no metacel.dev/policy label, so it is never
// read as a policy. When the record says nothing changed, nothing is written: a restart over a
// stable policy costs one read per policy (two with the loaded versions, below).
//
// A record is not trusted for what it is. Whoever may write ConfigMaps in the policy namespace
// (the built-in edit role there) may write it, and the stable source it keeps is compiled and run
// as the policy; the policies themselves are guarded (the metacel-policy-authors admission policy
// lets only the policy authors and the runtime write a ConfigMap labelled metacel.dev/policy=true).
// So a record runs only when Trust says so: its stable version, and its target if any, are
// versions the runtime loaded from the policy's labelled ConfigMap, and its source hashes
// (Version) to the stable version it names; a record that is not is reported, and the labelled
// version serves every parent. Hashes, not text: the source is in the record, and a hash is all
// it takes to tell it from a forged one.
//
// The loaded versions must outlive the process, since a runtime restarted mid-rollout resumes
// from a record naming a version only its predecessor loaded. They are kept where the record's
// writer cannot write them: on the labelled ConfigMap itself, in the annotation
// contract.AnnotationLoadedVersions (a JSON object, by policy name, of at most MaxLoadedVersions
// hashes, oldest first, the versions in use never dropped), written (Anchor) before any record
// naming them, by the runtime's own field manager, FieldManager. The admission policy that guards the
// policy guards the annotation with it; without it, whoever may write the record may write the
// policy, and no anchor would help. A coordination.k8s.io Lease (the ledger's, or one of its own)
// is no such place: the built-in edit role may write Leases (system:aggregate-to-edit grants
// leases.coordination.k8s.io, checked on Kubernetes v1.36 with kubectl auth can-i), so it is
// exactly as forgeable as the record. A version is trusted when this process loaded it
// (NoteLoaded) or the annotation lists it (Loaded). What it does not stop: replaying a record
// whose versions the policy's authors did load (an older, genuine version back as stable, within
// the last MaxLoadedVersions), and a policy from a file (no ConfigMap to anchor on) trusts only
// the versions its own process loaded, so its rollout does not survive a restart. The annotation
// is lost with its ConfigMap (deleted, or replaced by kubectl replace); a record then names
// versions no longer listed and is reported rather than resumed: the labelled version serves.
package rollout
