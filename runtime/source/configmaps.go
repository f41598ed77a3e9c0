package source

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PolicyLabel marks the ConfigMaps that hold policies.
const PolicyLabel = "metacel.dev/policy"

// WatchConfigMaps watches the ConfigMaps labelled metacel.dev/policy=true in one namespace (the
// only one trusted: labelled ConfigMaps elsewhere are never read) and sends a snapshot of their
// data values at start and after every change, until ctx is done.
func WatchConfigMaps(ctx context.Context, client kubernetes.Interface, namespace string, out chan<- Snapshot) error {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = PolicyLabel + "=true" }))
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
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
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

// configMapUnits turns each data value of each ConfigMap into a unit, in a stable order.
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
		for _, k := range keys {
			out = append(out, Unit{Name: "configmap/" + cm.Namespace + "/" + cm.Name + "/" + k, Data: []byte(cm.Data[k]), ConfigMap: ref})
		}
	}
	return out
}
