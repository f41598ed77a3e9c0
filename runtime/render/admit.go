package render

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/apivalidation"
	"metacel.dev/metacel/runtime/kinds"
)

// Admit gives the offline verdict on one object as the API server would give it to a create: nil
// when it would accept the object, else why not. It checks the object against the schema of its
// kind (s; nil skips it): a field the kind does not have, a value of the wrong type, a missing
// required field, two items of a keyed list with one key; then, for a built-in kind, Kubernetes'
// own validation of the kind (runtime/apivalidation): names, labels, ports, selectors, schedules
// and the rest, in the API server's wording, with a fix where one is known. A schema problem is
// said the way a policy's load errors say it (kinds.ObjectSchema.Fit), in field order, at most
// maxSchemaProblems of them; the validation runs only on an object that fits.
func Admit(obj *unstructured.Unstructured, s *kinds.ObjectSchema) error {
	if s != nil {
		if err := s.Fit(obj.Object, maxSchemaProblems); err != nil {
			return fmt.Errorf("%s %q does not fit the schema of its kind, so the API server would reject it: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return apivalidation.Refuse(obj)
}
