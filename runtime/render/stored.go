package render

import (
	"encoding/base64"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/kinds"
)

// storedForm rewrites a child of a built-in kind as the API server stores it, where the two
// differ by more than defaults: a write-only field, an alias, a value the server rewrites. The
// no-op check (noop.Schema.NeedsApply) compares the desired child with the stored one and cannot tell
// that `stringData: {a: x}` is `data: {a: eA==}`: unrewritten, such a child would be applied
// again at every sync (recreated, with the Recreate method) and never be up to date. And what is
// sent is then what is stored, so a field metacel applied is a field it owns: a key dropped from
// a Secret's stringData is removed from its data.
//
// Every caller of render (the runtime, `metacel render`, `metacel test`, `metacel plan`) sees the
// child as the cluster holds it. The desired hash (mark) is taken before: it stays the hash of
// the object as the policy wrote it, so that a child stored before this step existed is still
// judged up to date.
//
// A value of the wrong type is left as it is, for the schema check to report.
func storedForm(obj map[string]any, gk schema.GroupKind) {
	if store, ok := storedForms[gk]; ok {
		store(obj)
	}
}

// storedForms holds, by kind, the rewrite of each built-in kind the API server stores otherwise
// than sent (the conversions of pkg/apis/core/v1 in k8s.io/kubernetes): a Secret's stringData,
// base64 values with line breaks, the deprecated serviceAccount of a pod spec (a Pod's, or the
// pod template's of a workload), a Pod's negative grace period, a port's protocol "" (a
// container's, a Service's).
var storedForms = func() map[schema.GroupKind]func(map[string]any) {
	out := map[schema.GroupKind]func(map[string]any){
		{Kind: "Secret"}:    storeSecret,
		{Kind: "ConfigMap"}: func(obj map[string]any) { canonicalBase64(obj, "binaryData") },
		{Kind: "Pod"}:       storePod,
		{Kind: "Service"}:   storeService,
	}
	for gk, path := range kinds.PodSpecPaths {
		if out[gk] == nil {
			out[gk] = podSpecAt(path...)
		}
	}
	return out
}()

// storeSecret moves stringData into data, as the API server does: stringData is write-only (never
// returned), each of its keys overrides the same key of data, and data holds base64.
func storeSecret(obj map[string]any) {
	canonicalBase64(obj, "data")
	strs, ok := obj["stringData"].(map[string]any)
	if !ok {
		return
	}
	data, ok := obj["data"].(map[string]any)
	if !ok && obj["data"] != nil {
		return
	}
	encoded := make(map[string]any, len(strs))
	for k, v := range strs {
		s, ok := v.(string)
		if !ok {
			return
		}
		encoded[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	delete(obj, "stringData")
	if len(encoded) == 0 {
		return
	}
	if data == nil {
		data = encoded
	} else {
		for k, v := range encoded {
			data[k] = v
		}
	}
	obj["data"] = data
}

// canonicalBase64 spells the base64 values of a field (a Secret's data, a ConfigMap's binaryData)
// as the API server returns them: it decodes them ignoring line breaks (a YAML block scalar ends
// with one) and encodes them again without.
func canonicalBase64(obj map[string]any, field string) {
	values, _ := obj[field].(map[string]any)
	for k, v := range values {
		s, ok := v.(string)
		if !ok || !strings.ContainsAny(s, "\r\n") {
			continue
		}
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			values[k] = base64.StdEncoding.EncodeToString(b)
		}
	}
}

// storePod rewrites a Pod's spec; a negative terminationGracePeriodSeconds is stored as 1 (a
// Pod's only: a template's is stored as sent).
func storePod(obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return
	}
	storePodSpec(spec)
	if isNegative(spec["terminationGracePeriodSeconds"]) {
		spec["terminationGracePeriodSeconds"] = int64(1)
	}
}

// podSpecAt rewrites the pod spec at a path of a workload (its pod template's).
func podSpecAt(path ...string) func(map[string]any) {
	return func(obj map[string]any) {
		m := obj
		for _, f := range path {
			if m, _ = m[f].(map[string]any); m == nil {
				return
			}
		}
		storePodSpec(m)
	}
}

// storePodSpec rewrites a pod spec: its service account (storeServiceAccount), and its
// containers' ports (storePortProtocols).
func storePodSpec(spec map[string]any) {
	storeServiceAccount(spec)
	for _, field := range []string{"containers", "initContainers", "ephemeralContainers"} {
		containers, _ := spec[field].([]any)
		for _, c := range containers {
			if c, ok := c.(map[string]any); ok {
				storePortProtocols(c)
			}
		}
	}
}

// storeService rewrites a Service's ports (storePortProtocols).
func storeService(obj map[string]any) {
	if spec, ok := obj["spec"].(map[string]any); ok {
		storePortProtocols(spec)
	}
}

// storePortProtocols sets the protocol "" of each of the ports of a container or a Service to
// TCP, its default. protocol is a key of those map lists: applied as "", the port would be
// another item than the stored TCP one, never up to date, and the API server would refuse the
// next apply (a port listed twice: "Duplicate value").
func storePortProtocols(holder map[string]any) {
	ports, _ := holder["ports"].([]any)
	for _, p := range ports {
		if p, ok := p.(map[string]any); ok && p["protocol"] == "" {
			p["protocol"] = "TCP"
		}
	}
}

// storeServiceAccount sets a pod spec's deprecated serviceAccount, and serviceAccountName, to the
// one name the API server stores in both: serviceAccountName when set, else serviceAccount. Sent
// alone, a changed serviceAccount would change nothing: the server would keep the stored
// serviceAccountName, which wins, and the child would never be up to date.
func storeServiceAccount(spec map[string]any) {
	alias, _ := spec["serviceAccount"].(string)
	if alias == "" {
		return
	}
	name := alias
	switch v := spec["serviceAccountName"].(type) {
	case nil:
	case string:
		if v != "" {
			name = v
		}
	default:
		return
	}
	spec["serviceAccount"], spec["serviceAccountName"] = name, name
}

// isNegative reports whether v is a negative number.
func isNegative(v any) bool {
	switch x := v.(type) {
	case int64:
		return x < 0
	case int:
		return x < 0
	case float64:
		return x < 0
	}
	return false
}
