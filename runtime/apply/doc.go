// Package apply writes children to the API server: server-side apply with metacel's field
// manager, deletion with a UID precondition, and release of orphaned children. It also decides
// whether a write is needed at all: a child whose observed state already holds every field the
// policy sets needs none, so a converged parent costs no write.
//
// Nothing here reads an informer's cache for writing: observed objects are only compared, and
// what is sent is the desired object, built fresh by render.
package apply
