// Package compact keeps API objects in informer caches as the JSON the API server sent, beside
// their metadata, and turns one back into an unstructured object only when a sync reads it.
//
// A dynamic informer decodes every object of every list and watch event into nested
// map[string]any, which costs about five times the object's JSON in memory and most of a
// controller's CPU: for a cache of Pods, the maps are most of the process. A hand-written
// controller caches typed structs and pays neither. metacel cannot have Go types for the kinds a
// policy names, but it reads a cached object far less often than the cache holds it: a sync reads
// one parent and its children, while every object stays in memory for the life of the process.
//
// So the informers of the pool (runtime/informers) list and watch through ListWatch, whose
// decoder reads only an object's metadata (for the indexers, keys and event handlers) into a
// typed metav1.ObjectMeta and keeps the rest of the object's bytes; Unstructured decodes them on
// demand. The metadata is held once, in a struct of ObjectMeta's fields that holds the type as an
// interned handle and the fields few objects have behind a pointer, so that an Object takes 240
// bytes where embedding TypeMeta and ObjectMeta took 384 (meta.go); the labels, and the
// annotations with the finalizers, as slices of keys and values, where a Go map takes about 340
// bytes however few it holds (pairs.go), the labels of objects alike held once, their values that
// name the object or its owner marked (sharedlabels.go); the managed fields apart: interned, and without what the runtime never reads
// (Slim), so that the children of one template share metacel's entry (managed.go); and the
// bodies of objects alike once: their own and their owner's names marked, a body equal to one
// held for sharing is that one (sharedbody.go), so that the children of a template hold one body. Finding a watch event's end and its object's
// metadata skips the rest of the bytes without decoding or validating them (frame.go, scan.go):
// the standard decoders scan every byte two or three times first, which made the watch stream
// the largest CPU cost of a converge. The built-in kinds come as protobuf, as they do to
// Kubernetes' own components, from an API server no newer than the types built in
// (protobuf.go): their bytes are the protobuf message, their metadata its first field, and
// Unstructured decodes them through client-go's types. ShardedListWatch does the same for the
// objects whose UID hashes into a range of shard slots (runtime/hashslot), selected by the API
// server's shard selector when it honours them (ProbeShardSupport), else by dropping the others
// here before the informer sees them. An object larger than a cap is kept without its body
// (Omit, omit.go): who may create objects is not who runs the runtime, and Unstructured reads such
// an object from the API server instead. The objects the API server returns for writes are read
// with the same decoders (Responses, package apply's ResponseDecoder), and a child the controller
// created is held, until its cache delivers it, as the cache would hold it (AsCached). Nothing
// here writes to the API server.
//
// client-go has no decoder of this kind (its metadata-only client drops the rest of the
// object, and its unstructured decoder builds the maps), and no JSON decoder in the module graph
// skips what it does not read, hence this package.
package compact
