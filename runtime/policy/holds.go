package policy

import (
	"regexp"
	"strings"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/manifest"
)

// Holds reports whether the documents of a file hold policies, as `metacel validate`, `rbac` and
// `test` tell a folder's policies from its CRDs, samples and tests: a file that holds one is
// loaded, so that a mistake in it is an error at its line, never a file skipped in silence. A
// document holds policies when it is
//   - a policy: kind CompositePolicy, or any kind of the metacel.dev group (a misspelt kind is then
//     an error);
//   - a ConfigMap the runtime reads as policies: labelled metacel.dev/policy=true
//     (contract.LabelPolicyConfigMap) and no child of a policy, as source.WatchConfigMaps selects
//     them, whatever its data holds;
//   - a ConfigMap whose data holds a policy: a value with a `kind: CompositePolicy` line, whether
//     or not the value parses, or one that parses into a policy.
func Holds(heads []manifest.Head) bool {
	for _, h := range heads {
		switch {
		case isPolicy(h):
			return true
		case h.APIVersion == "v1" && h.Kind == "ConfigMap" && (labelledPolicies(h.Labels) || dataHoldsPolicy(h.Data)):
			return true
		}
	}
	return false
}

// isPolicy reports whether a document is a policy, or meant as one (a kind of the metacel.dev group).
func isPolicy(h manifest.Head) bool {
	return h.Kind == Kind || strings.HasPrefix(h.APIVersion, "metacel.dev/")
}

// labelledPolicies reports whether a ConfigMap's labels make the runtime read it as policies.
func labelledPolicies(labels map[string]string) bool {
	return labels[contract.LabelPolicyConfigMap] == "true" && labels[contract.LabelManagedBy] != contract.ManagedByValue
}

// policyKindLine matches a line that gives a YAML document the kind CompositePolicy.
var policyKindLine = regexp.MustCompile(`(?m)^\s*kind:\s*["']?` + Kind + `["']?\s*(#.*)?$`)

// dataHoldsPolicy reports whether a ConfigMap's data values hold a policy: one has a line
// `kind: CompositePolicy` (parsed or not), or parses into a document that is one.
func dataHoldsPolicy(data map[string]string) bool {
	for _, v := range data {
		if policyKindLine.MatchString(v) {
			return true
		}
		inner, err := manifest.Heads([]byte(v))
		if err != nil {
			continue
		}
		for _, h := range inner {
			if isPolicy(h) {
				return true
			}
		}
	}
	return false
}
