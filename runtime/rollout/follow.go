package rollout

// Follow decides what a replica that does not drive a policy's rollout does: rec is the record
// in the API server (nil: none), local what this replica runs (its stable and target versions,
// its step), steps the plan's number of steps.
//
// A record is followed only when it is about the rollout this replica runs: it names the same
// stable and target versions, both loaded here from the policy's ConfigMap, or, once complete,
// the target as the stable version. A record that names any other version is waited out: the
// driver has not started this version yet, or someone else wrote it. So a record, whoever wrote
// it, only ever moves a follower between the two versions it loaded itself.
//
// It answers as Decide does: Advance (move to the record's step), Complete, Fail (roll back,
// as the driver did), or Wait.
func Follow(rec *Record, local Record, steps int) Decision {
	switch {
	case rec == nil:
		return Wait
	case rec.Phase == Stable && rec.Stable == local.Target:
		return Complete
	case rec.Stable != local.Stable || rec.Target != local.Target:
		return Wait
	case rec.Phase == RolledBack:
		return Fail
	case rec.Phase == RollingOut && rec.Step != local.Step && rec.Step >= 0 && rec.Step < steps:
		return Advance
	}
	return Wait
}
