package tree

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// FindPolicyOf finds the running policy (the policy namespace's labelled ConfigMaps, as the
// runtime reads them) whose parent resource is kind: a resource (myapps), a kind (MyApp, myapp),
// either with its group (myapps.demo.rtfm.co.ua). Several policies of one resource are told
// apart by name, which the error lists.
func FindPolicyOf(ctx context.Context, kube kubernetes.Interface, namespace, kind string, m kinds.Mapper) (*clusterread.Running, error) {
	names, err := policiesOf(ctx, kube, namespace, kind, m)
	if err != nil {
		return nil, err
	}
	switch len(names) {
	case 0:
		return nil, fmt.Errorf("no policy in namespace %q has %q as its parent resource: give the parent's kind or resource (kubectl api-resources), or --policy-namespace", namespace, kind)
	case 1:
		return clusterread.FindRunning(ctx, kube, namespace, names[0], m)
	}
	return nil, fmt.Errorf("policies %s all have %q as their parent resource: name one with --policy", strings.Join(names, ", "), kind)
}

// FindPolicy finds the running policy named name.
func FindPolicy(ctx context.Context, kube kubernetes.Interface, namespace, name string, m kinds.Mapper) (*clusterread.Running, error) {
	r, err := clusterread.FindRunning(ctx, kube, namespace, name, m)
	if err == nil && r == nil {
		err = fmt.Errorf("no policy named %q in the labelled ConfigMaps of namespace %q", name, namespace)
	}
	return r, err
}

// policiesOf returns the names of the running policies whose parent resource is kind.
func policiesOf(ctx context.Context, kube kubernetes.Interface, namespace, kind string, m kinds.Mapper) ([]string, error) {
	units, err := clusterread.PolicyUnits(ctx, kube, namespace)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, u := range units {
		docs, _ := policy.Parse(u.Name, u.Data)
		for _, d := range docs {
			if d.Policy != nil && isParentOf(kind, d.Policy, m) && !slices.Contains(names, d.Policy.Metadata.Name) {
				names = append(names, d.Policy.Metadata.Name)
			}
		}
	}
	return names, nil
}

// isParentOf reports whether kind names the parent resource of p.
func isParentOf(kind string, p *policy.CompositePolicy, m kinds.Mapper) bool {
	gv, err := schema.ParseGroupVersion(p.Spec.ParentResource.APIVersion)
	if err != nil {
		return false
	}
	gvr := gv.WithResource(p.Spec.ParentResource.Resource)
	words := []string{gvr.Resource, gvr.Resource + "." + gvr.Group}
	if info, ok := m.ForResource(gvr); ok && info.Kind != "" {
		words = append(words, strings.ToLower(info.Kind), strings.ToLower(info.Kind)+"."+gvr.Group)
	}
	if p.Spec.ParentSchema != nil && p.Spec.ParentSchema.Kind != "" {
		words = append(words, strings.ToLower(p.Spec.ParentSchema.Kind), strings.ToLower(p.Spec.ParentSchema.Kind)+"."+gvr.Group)
	}
	return slices.Contains(words, strings.ToLower(kind))
}
