package tree

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/policy"
)

// Parents are a policy's parents with their conditions, the failing ones first.
type Parents struct {
	Policy  string        `json:"policy"`
	Parents []ParentState `json:"parents"`
	// Synced and Ready count the parents whose condition is True.
	Total  int `json:"total"`
	Synced int `json:"synced"`
	Ready  int `json:"ready"`
}

// ParentState is one parent and its conditions.
type ParentState struct {
	Object
	Synced Condition `json:"synced"`
	Ready  Condition `json:"ready"`
}

// Failing reports whether the parent is not Synced.
func (p ParentState) Failing() bool { return p.Synced.Status != "True" }

// ListParents lists the parents a policy selects, with their Synced and Ready conditions: those
// not Synced first, then those not Ready, then the others, each by namespace and name.
func ListParents(ctx context.Context, client dynamic.Interface, c *policy.Compiled) (*Parents, error) {
	selector := ""
	if c.ParentSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(c.ParentSelector)
		if err != nil {
			return nil, fmt.Errorf("policy %q: spec.parentResource.labelSelector: %w", c.Name(), err)
		}
		selector = s.String()
	}
	list, err := clusterread.List(ctx, client, c.Parent.GVR, "", selector)
	if err != nil {
		return nil, fmt.Errorf("list the %s of policy %q: %w", c.Parent.GVR.Resource, c.Name(), err)
	}
	out := &Parents{Policy: c.Name(), Total: len(list)}
	for _, p := range list {
		st := ParentState{Object: objectOf(p)}
		for _, cond := range conditionsOf(p) {
			switch cond.Type {
			case contract.ConditionSynced:
				st.Synced = cond
			case contract.ConditionReady:
				st.Ready = cond
			}
		}
		out.count(st)
		out.Parents = append(out.Parents, st)
	}
	slices.SortStableFunc(out.Parents, func(a, b ParentState) int { return rank(a) - rank(b) })
	return out, nil
}

func (ps *Parents) count(st ParentState) {
	if st.Synced.Status == "True" {
		ps.Synced++
	}
	if st.Ready.Status == "True" {
		ps.Ready++
	}
}

// rank orders parents: not Synced, then not Ready, then the others.
func rank(p ParentState) int {
	switch {
	case p.Failing():
		return 0
	case p.Ready.Status != "True":
		return 1
	}
	return 2
}
