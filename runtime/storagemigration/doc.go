// Package storagemigration migrates the stored objects of a CustomResourceDefinition's resource
// when its storage version changes, and then trims the CRD's status.storedVersions to the storage
// version, so that an old version can be removed safely later (Migrator.Migrate). NeedsMigration
// says, from a CRD as read, whether there is anything to do, so that a caller decides without a
// write.
//
// Why trim: status.storedVersions lists every version objects may be stored at in etcd. The API
// server adds the storage version to it and never removes one, and it refuses to drop from
// spec.versions a version that storedVersions lists, because an object still stored at it could no
// longer be read. Once every object is stored at the storage version, the list is trimmed to it,
// and only then can an old version go.
//
// Why a no-op update is enough: the API server encodes an object at the CRD's storage version on
// every write. Updating each object exactly as listed (its resourceVersion included, so that
// nothing anyone wrote meanwhile is overwritten) makes the API server decode it, convert it and
// store it again at the storage version, changing nothing else. An object written (Conflict) or
// deleted (NotFound) since it was listed is skipped: that write stored it at the storage version
// too. Objects are listed at the storage version in pages, in all namespaces.
//
// Level-based and resumable: every decision is made from the API server's objects. A CRD whose
// storedVersions is its storage version alone is not written to. After each page, Migrate records
// how far it got in an annotation on the CRD (Annotation: the storage version and CRD generation
// the rewrite is for, and the key of the last object done); a Migrate after a restart skips the
// objects listed before that key (the API server lists by key), unless the CRD's storage version
// or generation has changed since, which starts over. A continue token that expired (410) lists
// again from the start, past what is done. storedVersions is trimmed through the CRD's status
// subresource over the CRD as just read, so that a concurrent write makes it read again, and only
// if the CRD's generation is still the one migrated for: a spec that changed meanwhile (its storage
// version maybe) is ErrCRDChanged, with nothing trimmed, and the caller runs Migrate again. The
// annotation is removed after the trim.
//
// Why own code: the API server can migrate stored objects itself (StorageVersionMigration,
// storagemigration.k8s.io/v1beta1), but only where the cluster enables it (a beta API behind the
// StorageVersionMigrator feature gate, with its controller in the controller manager), which most
// clusters do not. Migrator.Server makes that optional: StorageVersionMigrations creates one, per
// CRD and generation, and waits for it to succeed when discovery says the cluster serves it;
// without it, or on a cluster that does not serve it, Migrate rewrites the objects itself. The wait
// is bounded only by the context: a cluster that serves the API without running its controller
// never succeeds.
//
// One window is left to the caller: an API server applies a CRD's new storage version moments
// after the CRD changes, and one that has not yet may store a write at the old version after
// Migrate has listed past the object. A caller migrates once the change has settled (the CRD
// Established at its new generation, and some time for every API server), not in the same moment.
package storagemigration
