package controller

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/identity"
)

// Identity is who a policy acts as: its ServiceAccount (package identity). Every write of the
// policy goes through Writer, which impersonates it; every object a sync reads for the policy from
// the runtime's shared caches is first checked with Reviewer. A zero ServiceAccount is the
// runtime's own identity: its reads are not checked.
type Identity struct {
	Writer         *apply.Writer
	ServiceAccount identity.ServiceAccount
	Reviewer       *identity.Reviewer
}

// actAs takes the identity the policy acts as from deps: its Writer replaces the shared one in
// this controller's copy of deps.
func (c *Controller) actAs() {
	if c.deps.ActAs == nil {
		return
	}
	id, err := c.deps.ActAs(c.policy)
	if err != nil {
		c.actAsErr = fmt.Errorf("policy %q: %w", c.Name(), err)
		return
	}
	c.actsAs = id
	if id.Writer != nil {
		c.deps.Writer = id.Writer
	}
}

// mayRead checks that the policy's ServiceAccount may make read: a sync reads from caches the
// runtime fills with its own, wider, permissions.
func (c *Controller) mayRead(ctx context.Context, read identity.Read) error {
	if !c.checksReads() {
		return nil
	}
	err := c.actsAs.Reviewer.Check(ctx, c.actsAs.ServiceAccount, read)
	var forbidden *identity.ForbiddenError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &forbidden):
		return &syncError{reason: contract.ReasonForbidden, retry: true, err: err}
	}
	return &syncError{reason: contract.ReasonAccessUnchecked, retry: true, err: err}
}

// mayReadParentAndChildren checks the reads of a parent and of its observed children.
func (c *Controller) mayReadParentAndChildren(ctx context.Context, parent *unstructured.Unstructured, observed map[string][]*unstructured.Unstructured) error {
	if !c.checksReads() {
		return nil // the runtime's own identity: nothing to gather on every sync
	}
	reads := []identity.Read{{Verb: "get", Resource: c.policy.Parent.GVR, Namespace: parent.GetNamespace(), Name: parent.GetName()}}
	seen := map[identity.Read]bool{}
	for _, objs := range observed {
		for _, obj := range objs {
			res, ok := c.resourceOf(obj)
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
		if err := c.mayRead(ctx, read); err != nil {
			return err
		}
	}
	return nil
}

// checksReads reports whether the policy's reads are checked: it acts as a ServiceAccount.
func (c *Controller) checksReads() bool {
	return c.actsAs.Reviewer != nil && c.actsAs.ServiceAccount != (identity.ServiceAccount{})
}
