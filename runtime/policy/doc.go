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
//   - compile (Load's last step) type-checks and compiles every CEL expression and ${} template
//     once (package expr), against the parent CRD's schema when one is known, so that a policy that
//     loads never fails to compile later, and evaluation per sync does no parsing. Its checker
//     (checks.go, a type of its own that compiles nothing) rejects what the API server or the run
//     time would reject for every parent and is written literally: a template child's
//     kind outside childResources; a literal namespace under a namespaced parent without
//     crossNamespace; a cluster-scoped kind with a namespace, or under a namespaced parent without
//     crossNamespace; a namespaced kind with no namespace under a cluster-scoped parent; a literal
//     namespace (a crossNamespace child's, a related object's) that spec.confinement can never
//     allow. The parent's scope is the one its CRD gives or, where none is known, the one
//     parentSchema declares; a scope the mapper only guesses decides nothing, and expression
//     children are left to run time. The status is checked against the parent's status schema as
//     a template child is against its kind's. children.<id> and a readyWhen's child are typed by the
//     child's kind where it is known (childtypes.go): a template child of an allowed resource the
//     mapper knows, typed from its CRD's schema or from the one Kubernetes ships for a built-in
//     kind, built once per load (a built-in kind's once per process); a forEach child's id is a
//     list of them; an expression child, a ${} kind and an unknown resource are dyn. related.<id>
//     is typed alike by its resource's kind (a list of them with a selector), dyn where the mapper
//     only guesses the resource. So a misspelt field of a child or a related object
//     (child.?status.?availableReplica, related.password.dta) is a load error naming the field
//     meant, not a default for ever. A validation that can return no bool is an error even
//     with an untyped parent (its metadata is typed), and a binding used where it does not exist
//     (variables in a validation) says so. Errors come in file order.
//     Every template child of a known kind is checked against the schema of its kind (kinds.SchemaOf:
//     the schema Kubernetes ships for a built-in kind, the CRD's for a custom one), as the API
//     server would check the object: an unknown field (with the closest known one), a literal of the
//     wrong type, a literal that is no quantity, an item of a keyed list without its keys or with
//     another item's, are errors at their line. The walk is kinds' (ObjectSchema.CheckTemplate, the
//     one render's check of a rendered object makes through ObjectSchema.Fit); what only a template
//     needs is policy's (childschema.go, a kinds.Template): a string with ${} in it holds an
//     expression, a field of the child entry in its template says so, and a whole-value "${...}" is
//     checked by its expression's type where both types are known, with the conversion to write; dyn passes, unless the expression may give a string
//     (expr.Program.MayGiveString: it reads a quantity or an int-or-string, or its orValue default
//     or a conditional's branch is a string) and the field takes no string (a quantity into an
//     integer status field). The schema is kept with the child resource
//     (ChildResourceInfo.ObjectSchema), for render to check what expressions give.
//   - A policy may declare its parent's custom resource in short (spec.parentSchema). ParentCRD
//     turns it into the CustomResourceDefinition `metacel crd` prints, which package parentcrd
//     builds from plain values (structural, with formats, CEL rules, immutable fields and printer
//     columns, checked with the API server's own structural-schema, defaulting and CEL
//     compilation code); ParentCRD places its errors as FieldErrors at the declaration's
//     lines. compile types the parent against it (declaredParent) when the mapper does not know
//     the parent: a CRD given (--crd) or installed wins, and the parent stays Guessed, so that a
//     cluster still waits for its CRD.
//   - A policy may say how a new version of itself reaches its parents (spec.rollout): steps of
//     growing shares, a health rule, a deadline and a failure budget. Validate checks the steps
//     (1 to 100, increasing, the last 100); compile compiles the health rule once, over parent
//     only, into a CompiledRollout, whose Healthy, Budget and Share, with RolloutBucket, are what
//     the runtime rolls out with.
//
// Lint finds what a valid policy does that its author likely did not mean (lint.go): binding
// children through which whoever may create a namespaced parent grants more than its namespace;
// and children the API server accepts without a word but that do not do what they say
// (lintobjects.go): a Secret key in both data and stringData, an HPA aimed at no child of the
// policy, a workload that sets replicas under an HPA. These read templates as written: a ${}
// value is compared by its text. Its findings read "file:line: field.path: warning: message";
// `metacel validate` prints them.
//
// YAML syntax errors read "file:line:column: invalid YAML: ..." at the mistake itself (package
// manifest locates it: a tab, an indentation, an unclosed quote).
//
// The compiled form is immutable and safe to share between goroutines; a reload compiles a new one
// off to the side and swaps it in.
package policy
