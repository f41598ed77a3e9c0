// Package fieldpath says where a field is, and which name a misspelt one likely meant, in the words
// every metacel message uses: a policy's load errors (spec.children[0].template), a rendered
// object's schema problems, a parent CRD's schema, a compile error's suggestion.
//
// A path is written as a CEL expression selects the field, so that it can be read, or pasted, as
// one: a key that is an identifier after a dot (spec.template), any other key quoted in brackets
// (labels["app.kubernetes.io/name"]), a list index in brackets (containers[0]). DidYouMean
// proposes the known name closest to an unknown one.
//
// These helpers sit below the packages that say such things (kinds, expr, policy, parentcrd), none
// of which owns them: kinds walks objects and knows no CEL, expr is the CEL environment.
package fieldpath
