// Package parentcrd builds the CustomResourceDefinition of a policy's parent from its short
// declaration (spec.parentSchema, with the group, version and plural of spec.parentResource):
// Build returns the CRD `metacel crd` prints and the runtime installs (parentSchema.install), one
// served and stored version with the status subresource, the declared printer columns and those
// of the Synced and Ready conditions, and a structural schema of the declared spec and status,
// with the status fields metacel writes and bounds on every string, list and map, checked with
// the API server's own structural-schema and defaulting code.
//
// What a CRD author writes by hand is declared too: CEL rules on a field or on the whole parent
// (x-kubernetes-validations, rules.go), immutable fields (sugar for self == oldSelf), formats, and
// printer columns whose jsonPath is checked against the schema and gives their type (columns.go).
// The rules are compiled as the API server compiles them, with apiextensions-apiserver's
// schema/cel.Compile, and their cost estimated as it estimates it (check.go): a rule the API
// server would refuse is an error at its line. The API server's own check of a whole CRD
// (apis/apiextensions/validation) is not imported: it brings the API server's webhook client,
// gRPC and OpenTelemetry into every binary, for checks (conversion webhooks, versions) a parent's
// CRD never needs; check.go repeats its walk over the rules, with its limits.
//
// A declared field is a type name or an object of keys (FieldTypes, FieldKeys); the grammar, its
// defaults and its error messages are defined here and nowhere else: the policy format's JSON
// Schema (schemas/compositepolicy.json) lists the same types, keys, formats and column types from
// FieldTypes, FieldKeys, Formats and ColumnTypes.
//
// It is a package of its own because a CRD is not what loading a policy makes: the loader uses
// it to type a parent that no CRD yet serves, `metacel crd` and the runtime's CRD installer to
// write it. It sits below package policy, which imports it: Build takes a Declaration of plain
// values and returns its mistakes as Errors at the policy's field paths, and policy.ParentCRD
// turns a policy's declaration into a Declaration and places the mistakes at their lines. So
// the loader, `metacel crd` and the installer all go through policy.ParentCRD, and nothing here
// knows a policy document, a file or a line.
package parentcrd
