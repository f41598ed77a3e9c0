// Package kinds knows which resources exist: for a resource its kind, for a kind its resource,
// whether it is namespaced, and, for custom resources, its OpenAPI schema.
//
// Policies name resources (apiVersion + plural) while templates produce objects (apiVersion +
// kind), so both directions are needed. A Catalog answers offline, from the built-in Kubernetes
// types and the CRD files given to the CLI; in a cluster the same questions are answered by
// discovery. For a kind it cannot know, a Catalog guesses the plural the way kubectl does and
// assumes the kind is namespaced; Lookup says when it guessed.
//
// SchemaOf gives the schema objects of a resource must fit (ObjectSchema): structured-merge-diff's,
// the one the API server's server-side apply checks an applied object against, from client-go's
// shipped schemas for built-in kinds and from the CRD's OpenAPI schema for custom resources.
// ObjectSchema.Validate checks an object with structured-merge-diff's typed conversion.
package kinds
