package source

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"metacel.dev/metacel/runtime/contract"
)

// policySelector selects the ConfigMaps that hold policies: labelled metacel.dev/policy=true
// (contract.LabelPolicyConfigMap), and not a child of a policy. A child carries
// app.kubernetes.io/managed-by=metacel and, until that key is retired on children, its policy's
// name under the same key (contract.LabelChildPolicyLegacy), so a policy named "true" labels its
// children as policies: none of them is ever read as one.
const policySelector = contract.LabelPolicyConfigMap + "=true," + contract.LabelManagedBy + "!=" + contract.ManagedByValue

// WatchConfigMaps watches the ConfigMaps labelled metacel.dev/policy=true in one namespace (the
// only one trusted: labelled ConfigMaps elsewhere are never read), but the children of policies
// (policySelector), and sends a snapshot of their data values at start and after every change,
// until ctx is done.
func WatchConfigMaps(ctx context.Context, client kubernetes.Interface, namespace string, out chan<- Snapshot) error {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = policySelector }))
	inf := factory.Core().V1().ConfigMaps()
	changed := make(chan struct{}, 1)
	notify := func(any) {
		select {
		case changed <- struct{}{}:
		default: // a snapshot is already due
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify, UpdateFunc: func(_, o any) { notify(o) }, DeleteFunc: notify,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitFor(ctx, "", inf.Informer().HasSyncedChecker()) { // no polling: the policies load at once
		return ctx.Err()
	}
	notify(nil) // the first snapshot, even with no ConfigMap
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			cms, err := inf.Lister().ConfigMaps(namespace).List(labels.Everything())
			if err != nil {
				return err
			}
			select {
			case out <- Snapshot{Source: "configmaps", Units: configMapUnits(cms)}:
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// configMapUnits turns each data value of each ConfigMap into a unit, in a stable order. A
// labelled ConfigMap without data values is a unit too, with the problem said, so that it is
// reported instead of silently ignored.
func configMapUnits(cms []*corev1.ConfigMap) []Unit {
	sort.Slice(cms, func(i, j int) bool { return cms[i].Name < cms[j].Name })
	var out []Unit
	for _, cm := range cms {
		keys := make([]string, 0, len(cm.Data))
		for k := range cm.Data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name, UID: cm.UID, ResourceVersion: cm.ResourceVersion}
		if len(keys) == 0 {
			out = append(out, Unit{Name: "configmap/" + cm.Namespace + "/" + cm.Name, ConfigMap: ref, Problem: noDataProblem(cm)})
			continue
		}
		for _, k := range keys {
			out = append(out, Unit{Name: "configmap/" + cm.Namespace + "/" + cm.Name + "/" + k, Data: []byte(cm.Data[k]), ConfigMap: ref})
		}
	}
	return out
}

// noDataProblem says why a labelled ConfigMap holds no policy, and how to fix it.
func noDataProblem(cm *corev1.ConfigMap) string {
	const fix = "put each policy under data (kubectl create configmap NAME --from-file=policy.yaml), or remove the label " + contract.LabelPolicyConfigMap
	if len(cm.BinaryData) > 0 {
		keys := make([]string, 0, len(cm.BinaryData))
		for k := range cm.BinaryData {
			keys = append(keys, strconv.Quote(k))
		}
		sort.Strings(keys)
		return fmt.Sprintf("ConfigMap %s/%s is labelled %s=true but holds its content under binaryData (%s), which is never read: %s",
			cm.Namespace, cm.Name, contract.LabelPolicyConfigMap, strings.Join(keys, ", "), fix)
	}
	return fmt.Sprintf("ConfigMap %s/%s is labelled %s=true but has no data key: %s", cm.Namespace, cm.Name, contract.LabelPolicyConfigMap, fix)
}
