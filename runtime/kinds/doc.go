// Package kinds knows which resources exist: for a resource its kind, for a kind its resource,
// whether it is namespaced, and, for custom resources, its OpenAPI schema.
//
// Policies name resources (apiVersion + plural) while templates produce objects (apiVersion +
// kind), so both directions are needed. A Catalog answers offline, from the built-in Kubernetes
// types and the CRD files given to the CLI; in a cluster the same questions are answered by
// discovery. For a kind it cannot know, a Catalog guesses the plural the way kubectl does and
// assumes the kind is namespaced; Lookup says when it guessed.
package kinds
