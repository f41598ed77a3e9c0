// Package clusterread reads the cluster as the runtime's offline and diagnostic commands need
// it, with the client they are given, never from an informer: objects listed page by page
// (List), the objects a related entry names (ReadRelated), the policy units of the policy
// ConfigMaps in the runtime's order (PolicyUnits), and the running version of a policy
// (FindRunning). `metacel plan`, `metacel tree` and the runtime's CRD installer share it, so that
// they read what the runtime reads in one way; it writes nothing.
package clusterread
