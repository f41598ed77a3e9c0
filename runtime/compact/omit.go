package compact

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
)

// A cache holds every object its informer lists and watches for the life of the process, and
// who may create an object is not who runs the runtime: a tenant's 1 MB ConfigMaps, or objects
// carrying a label any client may set, would be held whole, until the runtime runs out of
// memory (and, listing them again at each restart, never starts). So an object larger than a
// cap is kept without its body (Omit): its metadata only, as small as the indexes and keys need,
// and it is read from the API server when a sync reads it (Unstructured). What the cap costs is a
// GET per read of such an object; what it saves is everything else.

// DefaultMaxKeptBytes is the size above which an object's body is not kept in a cache: far above
// what the objects of a policy usually weigh (a Pod is a few KB), far below what etcd lets one
// weigh (1.5 MiB).
const DefaultMaxKeptBytes = 128 << 10

// maxOmittedLabelBytes bounds the labels an object without its body keeps: past it, only
// metacel's own (by which caches index children) are kept.
const maxOmittedLabelBytes = 4 << 10

// fetchTimeout bounds the read of an object whose body was not kept.
const fetchTimeout = 30 * time.Second

// Fetcher reads one object of a resource from the API server.
type Fetcher interface {
	Fetch(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
}

// Larger reports whether the object, its metadata as sent included, is larger than max bytes, or
// its body was dropped from the watch stream for being so: a cache keeps it with Omit.
func (o *Object) Larger(max int) bool {
	return o.bodyOmitted() || int(o.metaSize)+len(o.Raw) > max
}

// bodyOmitted reports whether the watch stream dropped the object's body (omitframe.go).
func (o *Object) bodyOmitted() bool { return o.uncommon != nil && o.uncommon.bodyOmitted }

// fetches reports whether the object's body was not kept: a decode reads it (fetched).
func (o *Object) fetches() bool { return o.uncommon != nil && o.uncommon.fetch != nil }

// Omit returns the object without its body, nor its annotations, nor (when they are large) the
// labels that are not metacel's: what f reads again when a sync decodes it.
func (o *Object) Omit(f Fetcher) *Object {
	out := &Object{heldType: o.heldType, heldMeta: o.deepCopy()}
	out.setLabels(pairsOf(keptLabels(out.GetLabels())))
	out.setStrs(nil, out.finalizers()) // a decode reads the annotations with the body
	out.uncommonFields().fetch, out.uncommon.bodyOmitted = f, false
	return out
}

// keptLabels are the labels an object without its body keeps: all of them when they are small,
// else metacel's.
func keptLabels(labels map[string]string) map[string]string {
	size := 0
	for k, v := range labels {
		size += len(k) + len(v)
	}
	if size <= maxOmittedLabelBytes {
		return labels
	}
	out := map[string]string{}
	for k, v := range labels {
		if contract.IsBookkeepingLabel(k) {
			out[k] = v
		}
	}
	return out
}

// fetched reads an object whose body was not kept from the API server, as it is now.
func (o *Object) fetched() (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	u, err := o.uncommon.fetch.Fetch(ctx, o.namespace, o.name)
	if err != nil {
		return nil, fmt.Errorf("read %s %s/%s, too large to be cached: %w", o.kind(), o.namespace, o.name, err)
	}
	return Slim(u), nil
}
