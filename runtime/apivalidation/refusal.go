package apivalidation

import (
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Refusal is the API server's answer to an object its validation refuses, and how to fix it.
type Refusal struct {
	// Status is the error the API server returns: 422 Invalid, with a cause per field error.
	Status *apierrors.StatusError
	// Errors are the field errors, in the validation's order.
	Errors field.ErrorList
}

// Refuse returns what the API server answers a create of obj when its validation (Validate)
// refuses the object: a *Refusal with the field errors; nil when it accepts it.
func Refuse(obj *unstructured.Unstructured) error {
	errs := Validate(obj)
	if len(errs) == 0 {
		return nil
	}
	return &Refusal{Status: apierrors.NewInvalid(obj.GroupVersionKind().GroupKind(), obj.GetName(), errs), Errors: errs}
}

// Error is the API server's message (`Deployment.apps "web" is invalid: spec.replicas: ...`)
// followed by the fix of each error that has one.
func (r *Refusal) Error() string {
	fixes := r.Fixes()
	if len(fixes) == 0 {
		return r.Status.Error()
	}
	return r.Status.Error() + " (fix: " + strings.Join(fixes, "; ") + ")"
}

// Unwrap gives the API server's error.
func (r *Refusal) Unwrap() error { return r.Status }

// Fixes returns the fix of each error that has one, each once.
func (r *Refusal) Fixes() []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range r.Errors {
		if f := Fix(e); f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}
