package kinds

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"metacel.dev/metacel/runtime/fieldpath"
)

// Misnamed says what is wrong with a kind that m does not know, where what is known says it is
// misspelt; "" when nothing does (a custom resource whose CRD was not given). A kind's name is
// matched exactly by the API server, but a resource's name is guessed from it lowercased, so a
// kind spelt with the wrong case ("Configmap") guesses a resource that exists (configmaps) and
// would pass as a child or a parent of it, while the server types no such kind and refuses every
// write. And a kind of one of Kubernetes' own groups (core, apps, batch...) that client-go does
// not know is no kind at all: no CRD can add one there.
func Misnamed(m Mapper, gvk schema.GroupVersionKind) string {
	if _, ok := m.ForKind(gvk); ok {
		return ""
	}
	gvr, _ := meta.UnsafeGuessKindToResource(gvk)
	if i, ok := m.ForResource(gvr); ok {
		if why := WrongKind(i, gvk.Kind); why != "" {
			return why
		}
	}
	builtin, ok := builtinKinds()[gvk.Group]
	if !ok || slices.Contains(builtin, gvk.Kind) {
		return "" // not a group of Kubernetes' own; or a kind of it at another version, which other checks judge
	}
	group := gvk.Group
	if group == "" {
		group = "core"
	}
	return fmt.Sprintf("the Kubernetes group %q has no kind %q%s", group, gvk.Kind, fieldpath.DidYouMean(gvk.Kind, builtin))
}

// WrongKind says that kind is not the kind of resource i's objects, when i knows theirs; "" when it
// is, or when i does not know.
func WrongKind(i Info, kind string) string {
	if i.Kind == "" || i.Kind == kind {
		return ""
	}
	return fmt.Sprintf("%s %s holds objects of kind %q, not %q: write kind: %s", i.GVR.GroupVersion(), i.GVR.Resource, i.Kind, kind, i.Kind)
}

// builtinKinds is the kinds of objects client-go knows in each of Kubernetes' own API groups, at
// any version.
var builtinKinds = sync.OnceValue(func() map[string][]string {
	byGroup := map[string]map[string]bool{}
	for gvk, t := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == "__internal" || !isObject(t) {
			continue
		}
		if byGroup[gvk.Group] == nil {
			byGroup[gvk.Group] = map[string]bool{}
		}
		byGroup[gvk.Group][gvk.Kind] = true
	}
	out := make(map[string][]string, len(byGroup))
	for g, ks := range byGroup {
		out[g] = slices.Sorted(maps.Keys(ks))
	}
	return out
})
