package render

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/apivalidation"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// Admit gives the offline verdict on one object as the API server would give it to a create: nil
// when it would accept the object, else why not. It checks the object against the schema of its
// kind (s; nil skips it): a field the kind does not have, a value of the wrong type, a missing
// required field, two items of a keyed list with one key; then, for a built-in kind, Kubernetes'
// own validation of the kind (runtime/apivalidation): names, labels, ports, selectors, schedules
// and the rest, in the API server's wording, with a fix where one is known. A schema problem is
// said the way a policy's load errors say it; the validation runs only on an object that fits.
func Admit(obj *unstructured.Unstructured, s *kinds.ObjectSchema) error {
	if s != nil {
		if err := fitsSchema(obj, s); err != nil {
			return fmt.Errorf("%s %q does not fit the schema of its kind, so the API server would reject it: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return apivalidation.Refuse(obj)
}

// fitsSchema checks the object against its schema. The library's walk follows Go's map order, so
// that which of two unknown fields it names changes from one check to the next: the problems are
// said in field order, as load errors are. The walk also finds what Validate does not look for: a
// missing required field (client-go's schema has none).
func fitsSchema(obj *unstructured.Unstructured, s *kinds.ObjectSchema) error {
	err := s.Validate(obj.Object)
	if problems := policy.SchemaMismatches(s, obj.Object, maxSchemaProblems); len(problems) > 0 {
		err = errors.New(strings.Join(problems, "; "))
	}
	return err
}
