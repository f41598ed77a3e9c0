package ledger

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"metacel.dev/metacel/runtime/apistore"
	"metacel.dev/metacel/runtime/contract"
)

// requestTimeout bounds each request of the ledger.
const requestTimeout = 30 * time.Second

// Ledger reads and writes policies' entries. A nil Ledger is off: it records nothing and knows
// nothing.
type Ledger struct {
	client    kubernetes.Interface
	namespace string
}

// New returns the ledger kept in namespace; "" turns it off (nil).
func New(client kubernetes.Interface, namespace string) *Ledger {
	if namespace == "" {
		return nil
	}
	return &Ledger{client: client, namespace: namespace}
}

// LeaseName is the name of a policy's Lease.
func LeaseName(policy string) string { return "metacel-policy-" + policy }

// ChildResources returns the child resources recorded for a policy (none when it has no entry).
func (l *Ledger) ChildResources(ctx context.Context, policy string) ([]schema.GroupVersionResource, error) {
	if l == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	lease, err := apistore.Get(ctx, l.client.CoordinationV1().Leases(l.namespace), LeaseName(policy))
	if err != nil {
		return nil, fmt.Errorf("read the ledger of policy %q: %w", policy, err)
	}
	if lease == nil {
		return nil, nil
	}
	return parseResources(lease.Annotations[contract.AnnotationChildResources]), nil
}

// FirstRecorded returns when a policy's entry was created: when the policy's controller first
// started in the cluster (it records the policy's child resources before it syncs anything);
// ok is false when the policy has none: it never ran. The policy set ranks two policies that claim
// one parent resource by it: read from the API server, every replica and every restart rank them
// alike.
func (l *Ledger) FirstRecorded(ctx context.Context, policy string) (since time.Time, ok bool, err error) {
	if l == nil {
		return time.Time{}, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	lease, err := apistore.Get(ctx, l.client.CoordinationV1().Leases(l.namespace), LeaseName(policy))
	if err != nil {
		return time.Time{}, false, fmt.Errorf("read the ledger of policy %q: %w", policy, err)
	}
	if lease == nil {
		return time.Time{}, false, nil
	}
	return lease.CreationTimestamp.Time, true, nil
}

// RecordChildResources sets the child resources recorded for a policy.
func (l *Ledger) RecordChildResources(ctx context.Context, policy string, gvrs []schema.GroupVersionResource) error {
	if l == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	value := formatResources(gvrs)
	leases := l.client.CoordinationV1().Leases(l.namespace)
	lease, err := apistore.Get(ctx, leases, LeaseName(policy))
	if err == nil {
		fresh := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Name: LeaseName(policy), Namespace: l.namespace,
			Labels:      map[string]string{contract.LabelManagedBy: contract.ManagedByValue},
			Annotations: map[string]string{contract.AnnotationChildResources: value},
		}}
		_, err = apistore.Write(ctx, leases, FieldManager, lease, fresh, func(lease *coordinationv1.Lease) bool {
			if lease.Annotations[contract.AnnotationChildResources] == value {
				return false
			}
			metav1.SetMetaDataAnnotation(&lease.ObjectMeta, contract.AnnotationChildResources, value)
			return true
		})
	}
	if err != nil {
		return fmt.Errorf("record the child resources of policy %q: %w", policy, err)
	}
	return nil
}

// FieldManager is the field manager of the ledger's Leases: the runtime's own, not "metacel",
// the children's.
const FieldManager = "metacel-ledger"

func formatResources(gvrs []schema.GroupVersionResource) string {
	out := make([]string, 0, len(gvrs))
	for _, gvr := range gvrs {
		out = append(out, gvr.Group+"/"+gvr.Version+"/"+gvr.Resource)
	}
	slices.Sort(out)
	return strings.Join(slices.Compact(out), ",")
}

func parseResources(s string) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for item := range strings.SplitSeq(s, ",") {
		if parts := strings.Split(item, "/"); len(parts) == 3 && parts[1] != "" && parts[2] != "" {
			out = append(out, schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]})
		}
	}
	return out
}
