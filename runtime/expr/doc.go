// Package expr is metacel's CEL: one environment, built once, in which every policy expression is
// compiled when its policy loads and evaluated per sync.
//
// The environment is cel-go with the extension libraries Kubernetes enables for CRD validation
// rules and ValidatingAdmissionPolicy (optional types, strings, lists, sets, math, encoders,
// bindings, two-variable comprehensions) and Kubernetes' own libraries (lists, regex, urls,
// quantity, ip, cidr, format, semver), so expressions read exactly as they do there. On top, what
// authors of generated objects need: hash.sha256/hash.fnv64a for stable names, map merge,
// json.encode/yaml.encode with a size-based cost, and string(quantity). Unlike Kubernetes' base
// environment it does not require homogeneous aggregate literals, so an object can be written as a
// map literal.
//
// Scopes declare the variables of each place an expression may appear (parent, variables,
// related, children, each, child). children, related and variables are declared as object types
// with exactly the ids the policy declares, so a misspelt id fails to compile. When the parent's
// OpenAPI schema is known, parent is typed from it; values are still plain maps at run time, which
// is about four times faster than schema-typed values and type-checks the same. children.<id>,
// related.<id> and child (a readyWhen's) are typed by their objects' kind where the policy knows
// it (ObjectID, Scope.ChildType): an ObjectType, from a CRD's schema (NewObjectType) or from the
// schema Kubernetes ships for a built-in kind (NewObjectTypeOf), read as the parent's is (metadata
// typed, formats as strings; int-or-string, quantities and preserved unknown fields dyn); a
// forEach or expression child's id, and a related id with a selector, is a list; an object of no
// known kind is dyn. The int-or-string and quantity fields are marked in their declared types, so
// that a compiled expression typed dyn says when it may give a string (intorstring.go,
// Program.MayGiveString): one that reads such a field, or whose orValue default or conditional
// branch is a string, into a field that takes a number is a load error of the policy. An ObjectType walks the
// hundreds of types nested in a kind once, and every environment declaring it shares them
// (types.go: a Deployment typed in each of a policy's environments would be walked a dozen times).
// Children's sizes in the cost estimate are the assumed maxima, as they were for dyn: a built-in
// kind's schema bounds nothing.
//
// Cost is bounded twice, as in Kubernetes: at compile time an expression whose estimated cost
// exceeds perExpressionCostLimit (1,000,000) is rejected; at run time a Budget caps what all
// expressions of one sync may spend together. Every evaluation is metered as it runs (cel-go's
// cost tracking, with Kubernetes' cost functions), stops once it has spent a whole budget, and is
// charged its actual cost, as Kubernetes charges each rule's: one that cost more than what was
// left fails. A call that builds a string or list is charged for what it builds too, and one that
// may build far more than its arguments hold (replace, join, format, json/yaml.encode, flatten)
// is checked before it runs, against what is left, so that no input makes an evaluation allocate
// more than a budget allows (meter.go). Writing out a result (EvalNative, templates) is charged
// as well. Only cheap expressions that no
// input can make dearer (no loop over input, operators and conversions only) run unmetered: they
// are charged their estimate before they run.
//
// Templates are strings holding ${expr}: a string that is exactly "${expr}" takes the
// expression's value and type, "a-${x}-b" interpolates, and "$${" is a literal "${". A whole
// value that gives null or an empty optional leaves its field out; so that authors may write
// "${cond ? value : null}", the null branches of the conditionals that give a whole value are
// typed dyn (conditional.go). A conditional whose branches differ otherwise is a compile error that
// says what works.
//
// Compile errors name the column in the expression and, for a misspelt field of a declared type
// (the parent's schema, a child's or related object's kind, children, related, variables) or
// variable, the name likely meant (suggest.go); index beside a forEach's each says what to name
// children by. An expression whose type cannot be what its place needs (forEach a list,
// includeWhen a bool) is a ResultTypeError that says the type it has and what to write (fix.go):
// a comparison, a size, a list field of the object, a default for an optional.
package expr
