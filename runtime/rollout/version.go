package rollout

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/policy"
)

// Version identifies a version of a policy: a hash of what it does, the policy as written less
// the labels and annotations of its own metadata that the runtime does not read (all but
// contract.ReadFromPolicy's). A change of those alone is the same version: nothing starts again, and nothing is
// written (a Deployment's pod-template hash ignores the Deployment's own annotations alike).
func Version(p *policy.Compiled) string {
	versioned := *p.Policy
	versioned.Metadata = policy.ObjectMeta{Name: p.Policy.Metadata.Name, Namespace: p.Policy.Metadata.Namespace,
		Annotations: reserved(p.Policy.Metadata.Annotations)}
	return hashOf(&versioned)
}

// legacyVersion is the version of a policy as runtimes before Version left out its metadata
// named it: a hash of the whole policy as written. The records and loaded versions those runtimes
// wrote name versions so.
func legacyVersion(p *policy.Compiled) string { return hashOf(p.Policy) }

// IsVersionOf reports whether version, as a record or a ConfigMap's loaded versions name it, is
// p's: its Version, or its version as an earlier runtime named it, so that a runtime upgraded
// over a policy that did not change sees the version it runs, not a change to roll out.
func IsVersionOf(version string, p *policy.Compiled) bool {
	return version == Version(p) || version == legacyVersion(p)
}

// reserved returns the entries of m that the runtime reads, or nil.
func reserved(m map[string]string) map[string]string {
	out := maps.Clone(m)
	maps.DeleteFunc(out, func(k, _ string) bool { return !contract.ReadFromPolicy(k) })
	if len(out) == 0 {
		return nil
	}
	return out
}

func hashOf(p *policy.CompositePolicy) string {
	b, err := json.Marshal(p)
	if err != nil {
		b = fmt.Appendf(nil, "%#v", p)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
