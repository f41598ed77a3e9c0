package servingcert

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// sync brings the Secret as last seen (nil: there is none) to what it should hold now, holds
// what it then holds, and returns when to look at it again.
func (k *Keeper) sync(ctx context.Context, current *corev1.Secret) (time.Time, error) {
	now := k.opts.Now()
	if current == nil {
		return k.create(ctx, now)
	}
	have := parse(current.Data)
	if have.usable(now) {
		k.adopt(ctx, have)
	}
	want, why, err := k.opts.plan(have, now)
	if err != nil {
		return time.Time{}, err
	}
	if len(why) == 0 {
		return have.next(), nil
	}
	klog.FromContext(ctx).Info("Renewing the serving certificate", "reasons", why)
	return k.update(ctx, current, want, now)
}

// create creates the Secret with a new CA and serving certificate; when another replica created
// it first, what it wrote is adopted.
func (k *Keeper) create(ctx context.Context, now time.Time) (time.Time, error) {
	want, _, err := k.opts.plan(material{}, now)
	if err != nil {
		return time.Time{}, err
	}
	data, err := want.data()
	if err != nil {
		return time.Time{}, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: k.opts.Namespace, Name: k.opts.SecretName},
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}
	_, err = k.client.CoreV1().Secrets(k.opts.Namespace).Create(ctx, secret, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		return k.adoptWritten(ctx, now)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("creating Secret %s: %w", klog.KObj(secret), err)
	}
	klog.FromContext(ctx).Info("Created the serving certificate's Secret")
	k.adopt(ctx, want)
	return want.next(), nil
}

// update writes want over current, at current's resourceVersion; when another replica wrote it
// first, what it wrote is adopted, never overwritten.
func (k *Keeper) update(ctx context.Context, current *corev1.Secret, want material, now time.Time) (time.Time, error) {
	data, err := want.data()
	if err != nil {
		return time.Time{}, err
	}
	secret := current.DeepCopy()
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	maps.Copy(secret.Data, data)
	_, err = k.client.CoreV1().Secrets(k.opts.Namespace).Update(ctx, secret, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return k.adoptWritten(ctx, now)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("updating Secret %s: %w", klog.KObj(secret), err)
	}
	k.adopt(ctx, want)
	return want.next(), nil
}

// adoptWritten reads the Secret another replica wrote (or deleted) meanwhile and holds what it
// holds; the Secret is looked at again soon, as its watch shows it.
func (k *Keeper) adoptWritten(ctx context.Context, now time.Time) (time.Time, error) {
	secret, err := k.client.CoreV1().Secrets(k.opts.Namespace).Get(ctx, k.opts.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return now.Add(afterConflict), nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("reading Secret %s: %w", klog.KRef(k.opts.Namespace, k.opts.SecretName), err)
	}
	klog.FromContext(ctx).V(1).Info("The Secret was written by another replica meanwhile; adopting it")
	if m := parse(secret.Data); m.usable(now) {
		k.adopt(ctx, m)
	}
	return now.Add(afterConflict), nil
}

// secretWatch is an informer of the one Secret: changed receives a value when it changes.
type secretWatch struct {
	store   cache.Store
	synced  cache.InformerSynced
	changed chan struct{}
	key     string
}

// watchSecret starts an informer of the Keeper's Secret alone (a field selector on its name),
// until ctx ends.
func (k *Keeper) watchSecret(ctx context.Context) *secretWatch {
	secrets := k.client.CoreV1().Secrets(k.opts.Namespace)
	onlyOurs := fields.OneTermEqualSelector("metadata.name", k.opts.SecretName).String()
	w := &secretWatch{changed: make(chan struct{}, 1), key: k.opts.Namespace + "/" + k.opts.SecretName}
	kick := func(any) {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	store, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				opts.FieldSelector = onlyOurs
				return secrets.List(ctx, opts)
			},
			WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
				opts.FieldSelector = onlyOurs
				return secrets.Watch(ctx, opts)
			},
		}, k.client),
		ObjectType: &corev1.Secret{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    kick,
			UpdateFunc: func(_, obj any) { kick(obj) },
			DeleteFunc: kick,
		},
	})
	go informer.RunWithContext(ctx)
	w.store, w.synced = store, informer.HasSynced
	return w
}

// drain forgets a change not yet received.
func (w *secretWatch) drain() {
	select {
	case <-w.changed:
	default:
	}
}

// latest returns the Secret as last seen; nil when there is none.
func (w *secretWatch) latest() (*corev1.Secret, error) {
	obj, ok, err := w.store.GetByKey(w.key)
	if err != nil || !ok {
		return nil, err
	}
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, fmt.Errorf("the informer of Secret %q holds a %T", w.key, obj)
	}
	return secret, nil
}
