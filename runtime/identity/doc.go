// Package identity is who a policy acts as in the cluster: its own ServiceAccount, never the
// runtime. Whoever may write a policy would otherwise wield the runtime's permissions, which span
// every resource any policy uses in every namespace: a policy's author could create a privileged
// Pod in kube-system, or copy any ConfigMap, through the runtime.
//
// A policy names a ServiceAccount of the policy namespace (spec.serviceAccountName). Its writes
// (children, the parent's status and finalizer) go through clients that impersonate that
// ServiceAccount (Config), so the API server's authorization and admission judge them as the
// ServiceAccount's own. Its reads come from the runtime's shared informers, so each object a sync
// reads for it is checked first with a SubjectAccessReview of the ServiceAccount (Reviewer): the
// answers are cached per verb, resource, namespace and name, a namespace's or the cluster's
// allowance covering every name in it, so that a converged cluster asks about once per resource
// and minute, not once per parent.
//
// client-go impersonates but has no cache of access reviews for a client (the API server's
// delegating authorizer caches its own, and is not a client library), hence Reviewer.
package identity
