package policystatus

// State is where a policy stands.
type State string

// The states of a policy, from the least severe to the most.
const (
	// Running: the policy's controller runs its latest version.
	Running State = "Running"
	// RollingOut: a new version is being rolled out, step by step.
	RollingOut State = "RollingOut"
	// Waiting: the policy waits for resources the cluster does not serve yet (their CRDs).
	Waiting State = "Waiting"
	// NotSynced: the policy's caches have not synced (e.g. the runtime may not list a resource).
	NotSynced State = "NotSynced"
	// RolledBack: a rollout failed and the previous version runs again.
	RolledBack State = "RolledBack"
	// Invalid: the latest version failed to load; the last good version, if any, keeps running.
	Invalid State = "Invalid"
)

// severity orders states for the ConfigMap's label: the most severe of its policies is shown. A
// state not listed ranks below Running.
var severity = map[State]int{Running: 1, RollingOut: 2, Waiting: 3, NotSynced: 4, RolledBack: 5, Invalid: 6}

// Status is one policy's status, as the annotation metacel.dev/status holds it.
type Status struct {
	State State `json:"state"`
	// Version is the running version's hash, shortened to 12 hex digits (ShortVersion).
	Version string `json:"version,omitempty"`
	// Parents counts the policy's parents; Ready those whose children are ready, Failing those
	// whose last sync failed.
	Parents int `json:"parents"`
	Ready   int `json:"ready"`
	Failing int `json:"failing"`
	// Step and Steps say a rollout is at step Step of Steps; both are 0 when none is under way.
	Step  int `json:"step,omitempty"`
	Steps int `json:"steps,omitempty"`
	// LastError is the last error (load, sync), empty when none.
	LastError string `json:"lastError,omitempty"`
}

// ShortVersion shortens a version's hash (a policy's sha256, in hex) to the 12 digits shown.
func ShortVersion(hash string) string {
	if len(hash) > versionLength {
		return hash[:versionLength]
	}
	return hash
}

const versionLength = 12
