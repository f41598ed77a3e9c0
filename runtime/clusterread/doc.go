// Package clusterread reads the cluster with the client it is given, never from an informer:
// objects listed page by page (List), the objects a related entry names (ReadRelated), the policy
// units of the policy ConfigMaps in the runtime's order (PolicyUnits), and the running version of
// a policy (FindRunning). `metacel plan`, `metacel tree`, the runtime's CRD installer and the
// runtime's decisions that must not trust a cache (its finalizer, letting go of parents that left
// the labelSelector, removing the children of a dropped resource) share it, so that they read
// what the runtime reads in one way; it writes nothing.
package clusterread
