// Package policy defines the CompositePolicy format (metacel.dev/v1alpha1) and turns policy files
// into compiled, ready-to-evaluate policies.
//
// Loading happens in three steps, each of which reports errors as "file:line: field.path: message":
//
//   - Parse decodes YAML strictly, straight from the yaml.Node tree rather than through JSON, so
//     that every field keeps the line it came from. Unknown fields, wrong types, duplicate keys and
//     duplicate ids are errors. A file may hold several documents, and a ConfigMap whose data values
//     hold policies is accepted wherever a policy is.
//   - Validate checks what the types cannot say: required fields, enums, id syntax, references
//     between children and childResources.
//   - Compile type-checks and compiles every CEL expression and ${} template once (package expr),
//     against the parent CRD's schema when one is known, so that a policy that loads never fails
//     to compile later, and evaluation per sync does no parsing. It also rejects what the run time
//     would reject for every parent and is written literally: a template child's kind outside
//     childResources; a literal namespace under a namespaced parent without crossNamespace; a
//     cluster-scoped kind with a namespace, or under a namespaced parent without crossNamespace.
//     A scope the mapper only guesses decides nothing, and expression children are left to run time.
//
// The compiled form is immutable and safe to share between goroutines; a reload compiles a new one
// off to the side and swaps it in.
package policy
