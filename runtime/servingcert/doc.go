// Package servingcert keeps the runtime's serving certificate, the one its HTTPS conversion
// webhook presents to the API server, and the CA the API server trusts it by. The runtime makes
// them itself and keeps them in one Secret of its namespace (kubernetes.io/tls: tls.crt and
// tls.key, the CA bundle in ca.crt, the key of the CA that signs in ca.key), which every replica
// shares: each serves the same certificate, so the CA bundle written into a CRD trusts them all.
//
// A Keeper (Run) creates the Secret when there is none, and otherwise adopts what is in it: a
// replica that loses the race to create it (AlreadyExists), or to update it (a Conflict at the
// resourceVersion it read), reads what the winner wrote and holds that, never overwriting it. It
// watches the Secret alone (a field selector on its name), so another replica's renewal, or a
// deleted Secret, is seen at once. It renews the serving certificate once 2/3 of its life has
// passed, or when its names differ from the Options' (a Service name added), and replaces the CA
// once 2/3 of the CA's life has passed: the new CA signs from then on, the bundle holds it and
// the CA it replaced until that one expires, and the serving certificate signed by the old CA is
// served until its own renewal (it never outlives its CA). A client that picks up the new bundle
// before then (the runtime re-installs its CRDs on Changes) sees no gap. Keys are ECDSA P-256,
// certificates made with crypto/x509 alone.
//
// GetCertificate serves the certificate held now, so a tls.Config that uses it serves a renewed
// certificate without a restart; CABundle is the caBundle for a CRD; Ready is closed once a
// certificate is held, Changes receives a value when the bundle changes.
//
// Why not cert-manager: the runtime must work on a cluster that does not run it, and a CRD's
// caBundle must follow the certificate without an injector. Why one Secret rather than a
// certificate per replica: the API server trusts one bundle per CRD, and any replica may answer
// (conversion is stateless); a certificate per replica would need a bundle that changes with the
// replica count. Why a field manager on a Create and Update rather than an apply: a write must
// be refused when another replica wrote first (the resourceVersion read), and an apply cannot say
// so.
package servingcert
