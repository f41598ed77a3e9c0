package clusterread

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/source"
)

// Running is the version of a policy that runs now, and where it was found.
type Running struct {
	Policy *policy.Compiled
	// Source is configmap/<namespace>/<name>/<key>, as the runtime names a policy unit.
	Source string
}

// FindRunning finds the version of the policy named name that the runtime loads from the policy
// namespace: the first data value (ConfigMaps by name, then keys, as the runtime reads them) of a
// ConfigMap labelled metacel.dev/policy=true that holds a policy of that name, compiled with m.
// It returns nil when none holds one: the policy is new. A value that does not parse is skipped,
// as it cannot be running; the one holding the policy must compile, else the comparison would
// be with nothing.
func FindRunning(ctx context.Context, kube kubernetes.Interface, namespace, name string, m kinds.Mapper) (*Running, error) {
	units, err := PolicyUnits(ctx, kube, namespace)
	if err != nil {
		return nil, err
	}
	for _, u := range units {
		if !holds(u.Name, u.Data, name) {
			continue
		}
		c, err := load(u.Name, u.Data, name, m)
		if err != nil {
			return nil, err
		}
		return &Running{Policy: c, Source: u.Name}, nil
	}
	return nil, nil
}

// PolicyUnits reads the data values of the ConfigMaps labelled metacel.dev/policy=true in the
// policy namespace, in the order the runtime reads them (ConfigMaps by name, then keys), each
// named configmap/<namespace>/<name>/<key> as the runtime names a policy unit.
func PolicyUnits(ctx context.Context, kube kubernetes.Interface, namespace string) ([]source.Unit, error) {
	ctx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
	defer cancel()
	list, err := kube.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelPolicyConfigMap + "=true"})
	if err != nil {
		return nil, fmt.Errorf("list the policy ConfigMaps of namespace %q: %w", namespace, err)
	}
	cms := list.Items
	slices.SortFunc(cms, func(a, b corev1.ConfigMap) int { return strings.Compare(a.Name, b.Name) })
	var out []source.Unit
	for _, cm := range cms {
		for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
			out = append(out, source.Unit{Name: "configmap/" + cm.Namespace + "/" + cm.Name + "/" + key, Data: []byte(cm.Data[key])})
		}
	}
	return out, nil
}

// holds reports whether data parses into documents of which one is the policy named name.
func holds(unit string, data []byte, name string) bool {
	docs, _ := policy.Parse(unit, data)
	for _, d := range docs {
		if d.Policy != nil && d.Policy.Metadata.Name == name {
			return true
		}
	}
	return false
}

// load compiles the policy named name of a unit.
func load(unit string, data []byte, name string, m kinds.Mapper) (*policy.Compiled, error) {
	all, err := policy.Load(unit, data, m)
	for _, c := range all {
		if c.Name() == name {
			return c, nil
		}
	}
	if err == nil {
		err = errors.New("no policy of that name compiled")
	}
	return nil, fmt.Errorf("the running version of policy %q (%s) does not load now, so there is nothing to compare with: %w", name, unit, err)
}
