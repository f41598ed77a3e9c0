package readiness

import "metacel.dev/metacel/runtime/projection"

// Fields returns what Of reads of an object besides its metadata, whatever its kind: its status
// whole, and the spec fields kstatus reads of the kinds it knows (a workload's replicas, update
// strategy and progress deadline, a Job's parallelism and completions, a Service's type and
// cluster IP). A cache of children judged by kind keeps at least these (package projection).
func Fields() *projection.Fields {
	return (&projection.Fields{}).Keep("status").
		Keep("spec", "replicas").Keep("spec", "updateStrategy").Keep("spec", "progressDeadlineSeconds").
		Keep("spec", "parallelism").Keep("spec", "completions").
		Keep("spec", "type").Keep("spec", "clusterIP")
}
