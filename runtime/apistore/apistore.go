package apistore

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is a typed API object, by pointer: *corev1.ConfigMap, *coordinationv1.Lease.
type Object interface {
	comparable
	runtime.Object
}

// Getter reads objects of one kind in one namespace: a typed client of client-go is one.
type Getter[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

// Client reads and writes objects of one kind in one namespace: client-go's
// CoreV1().ConfigMaps(ns) and CoordinationV1().Leases(ns) are one.
type Client[T Object] interface {
	Getter[T]
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// Get returns the object named name as the API server holds it; nil when there is none.
func Get[T comparable](ctx context.Context, c Getter[T], name string) (T, error) {
	var none T
	obj, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			err = nil
		}
		return none, err
	}
	return obj, nil
}

// Write writes what set puts in an object, and returns the object as written. current is the
// object as read (nil: there is none): set is given a copy of it, and reports whether it changed
// anything; when it did not, no request is sent and current is returned. With no current, set is
// given fresh (its name, its namespace, what a new object holds besides), which is created. An
// update is made over the version read: an object changed since is refused (Conflict), one
// created meanwhile too (AlreadyExists), one deleted meanwhile is NotFound; none of them is
// retried.
func Write[T Object](ctx context.Context, c Client[T], fieldManager string, current, fresh T, set func(T) bool) (T, error) {
	var none, written T
	var err error
	if current == none {
		set(fresh)
		written, err = c.Create(ctx, fresh, metav1.CreateOptions{FieldManager: fieldManager})
	} else {
		obj := current.DeepCopyObject().(T)
		if !set(obj) {
			return current, nil
		}
		written, err = c.Update(ctx, obj, metav1.UpdateOptions{FieldManager: fieldManager})
	}
	if err != nil {
		return none, err
	}
	return written, nil
}

// Known is what a store knows of the content of its objects: by name, what it last read from or
// wrote to the API server, so that writing that content again sends no request.
type Known[V any] struct {
	read func(ctx context.Context, name string) (V, error)
	same func(a, b V) bool

	mu   sync.Mutex
	last map[string]V
}

// NewKnown returns what a store knows, knowing nothing yet: read reads an object's content from
// the API server (what stands for none when there is none), same compares two contents as they
// are stored.
func NewKnown[V any](read func(ctx context.Context, name string) (V, error), same func(a, b V) bool) *Known[V] {
	return &Known[V]{read: read, same: same, last: map[string]V{}}
}

// Get reads the content of the object named name, and remembers it.
func (k *Known[V]) Get(ctx context.Context, name string) (V, error) {
	v, err := k.read(ctx, name)
	if err == nil {
		k.remember(name, v)
	}
	return v, err
}

// Put writes want with write, unless the object named name holds it: the content last read or
// written or, when there is none (a restart), the content read now (one that cannot be read is
// written). A failed write is returned, and want is not remembered.
func (k *Known[V]) Put(ctx context.Context, name string, want V, write func(context.Context) error) error {
	have, ok := k.known(name)
	if !ok {
		var err error
		have, err = k.Get(ctx, name)
		ok = err == nil
	}
	if ok && k.same(have, want) {
		return nil
	}
	if err := write(ctx); err != nil {
		return err
	}
	k.remember(name, want)
	return nil
}

func (k *Known[V]) known(name string) (V, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.last[name]
	return v, ok
}

func (k *Known[V]) remember(name string, v V) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last[name] = v
}
