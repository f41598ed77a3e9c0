// Package projection says which fields of an object a cache keeps: the part of the object the
// runtime reads, derived when a policy loads from what its expressions and templates read and
// what the readiness of a kind reads (package policy builds it; package compact applies it to the
// bytes an informer caches).
//
// A Fields is a tree of field names. A node keeps either its whole value or only the fields named
// below it; a list is transparent: the node of a list field applies to every item. The
// identifying part of an object (apiVersion, kind, metadata) is always kept whole: informers key,
// index and route by it, and it is what the write decision reads of every child.
//
// structured-merge-diff's fieldpath.Set, the library's field set, names list items by key, value
// or index; a projection must name "every item" and "everything below", which it cannot, hence a
// tree of its own. Map projects a decoded object (unit tests' informers, and the tests that hold a
// render of a projected object to the render of the whole one); compact projects the cached bytes.
package projection
