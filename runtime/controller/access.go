package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/identity"
	"metacel.dev/metacel/runtime/policy"
)

// access checks the reads of a policy's syncs as the identity it acts as: the objects a sync
// reads come from caches the runtime fills with its own, wider, permissions.
type access struct {
	policy *policy.Compiled
	// actsAs is the identity the policy acts as; err why it has none
	actsAs Identity
	err    error
}

// actAs takes the identity the policy acts as from deps: its Writer replaces the shared one in
// deps, the controller's copy.
func actAs(p *policy.Compiled, deps *Deps) *access {
	a := &access{policy: p}
	if deps.ActAs == nil {
		return a
	}
	id, err := deps.ActAs(p)
	if err != nil {
		a.err = fmt.Errorf("policy %q: %w", p.Name(), err)
		return a
	}
	a.actsAs = id
	if id.Writer != nil {
		deps.Writer = id.Writer
	}
	return a
}

// mayRead checks that the policy's ServiceAccount may make read: a sync reads from caches the
// runtime fills with its own, wider, permissions.
func (a *access) mayRead(ctx context.Context, read identity.Read) error {
	if !a.checksReads() {
		return nil
	}
	err := a.actsAs.Reviewer.Check(ctx, a.actsAs.ServiceAccount, read)
	var forbidden *identity.ForbiddenError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &forbidden):
		return &syncError{reason: contract.ReasonForbidden, err: err}
	}
	return &syncError{reason: contract.ReasonAccessUnchecked, err: err}
}

// mayReadParentAndChildren checks the reads of a parent and of its observed children.
func (a *access) mayReadParentAndChildren(ctx context.Context, parent *unstructured.Unstructured, observed map[string][]*unstructured.Unstructured) error {
	if !a.checksReads() {
		return nil // the runtime's own identity: nothing to gather on every sync
	}
	reads := []identity.Read{{Verb: "get", Resource: a.policy.Parent.GVR, Namespace: parent.GetNamespace(), Name: parent.GetName()}}
	seen := map[identity.Read]bool{}
	for _, id := range slices.Sorted(maps.Keys(observed)) { // in one order: the first refusal is the same at every retry
		for _, obj := range observed[id] {
			res, ok := resourceOf(a.policy.ChildResources, obj)
			if !ok {
				continue
			}
			read := identity.Read{Verb: "get", Resource: res.GVR, Namespace: obj.GetNamespace()}
			if !seen[read] {
				seen[read] = true
				reads = append(reads, read)
			}
		}
	}
	for _, read := range reads {
		if err := a.mayRead(ctx, read); err != nil {
			return err
		}
	}
	return nil
}

// checksReads reports whether the policy's reads are checked: it acts as a ServiceAccount.
func (a *access) checksReads() bool {
	return a.actsAs.Reviewer != nil && a.actsAs.ServiceAccount != (identity.ServiceAccount{})
}
