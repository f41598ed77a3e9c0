// Package conversion converts a policy's parents between the versions its parentSchema declares,
// with the CEL templates the policy writes for each version (policy.CompiledConversion): an object
// goes to the policy's version (the hub) with its version's toHub, and from there to another with
// that version's fromHub, so that n versions need 2(n-1) conversions, not n(n-1).
//
// It is what the runtime's conversion webhook (package conversionwebhook) calls for each object
// the API server sends, and what `metacel test` and `metacel validate` call offline, so that the
// cluster and the offline checks convert alike. A conversion is a pure function of the object:
// every replica answers the same, and none keeps state.
//
// Nothing is lost on a round trip: the fields a conversion does not carry (its keep list) travel
// in an annotation of the converted object (contract.AnnotationKeptPrefix + the version they came
// from), and are put back, and the annotation dropped, when the object converts back to that
// version. A converted object is checked against its version's schema before it is returned, so
// that a conversion never hands the API server an object its version does not hold: the error
// names the object and the fields.
package conversion
