package contract

// The keys on the objects the runtime keeps for itself in its namespace (runtime records): they
// are no policy's and no parent's, and no child is among them.
const (
	// LabelMemoOf names, on a memo's ConfigMap, the policy it is about (package memo).
	LabelMemoOf = "metacel.dev/memo-of"
	// LabelRolloutOf names, on a rollout record's ConfigMap, the policy it is about (package
	// rollout).
	LabelRolloutOf = "metacel.dev/rollout-of"
	// AnnotationChildResources lists, on a policy's ledger Lease, the child resources it has had
	// children of (package ledger).
	AnnotationChildResources = "metacel.dev/child-resources"
	// LabelShardMember "true" marks the Leases of the replicas that shard the parents (package
	// shard).
	LabelShardMember = "metacel.dev/shard-member"
	// AnnotationShardSlots shows, on a replica's Lease, the slots it syncs now (e.g. "0-20").
	AnnotationShardSlots = "metacel.dev/shard-slots"
	// AnnotationShardReport holds, on a replica's Lease, what its report gave at its last renewal
	// (shard.Options.Report).
	AnnotationShardReport = "metacel.dev/shard-report"
	// LabelShardTable "true" marks the ConfigMap holding the owner of each slot (shard.TableName).
	LabelShardTable = "metacel.dev/shard-table"
)
