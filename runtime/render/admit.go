package render

import (
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// Admit is metacel's offline verdict on one object of a kind whose schema is s: nil when the API
// server would accept it, else why it would refuse it. Today that is the schema check a render
// makes of every child (checkSchema): a field its kind does not have, a value of the wrong type,
// two items of a keyed list with one key, a missing required field, two exclusive fields, a
// malformed quantity; Kubernetes' own validation beyond the schema (names, label values, ports, a
// workload's selector, a cron schedule) is not checked yet. A nil s (a kind whose schema is not
// known) admits anything. The e2e test TestOfflineVerdictAgreesWithTheAPIServer measures how far
// this verdict agrees with the API server's.
func Admit(obj *unstructured.Unstructured, s *kinds.ObjectSchema) error {
	if s == nil {
		return nil
	}
	// the problems in field order, as checkSchema says them; Validate finds the rest
	err := s.Validate(obj.Object)
	if problems := policy.SchemaMismatches(s, obj.Object, maxSchemaProblems); len(problems) > 0 {
		err = errors.New(strings.Join(problems, "; "))
	}
	return err
}
