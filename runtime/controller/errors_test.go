package controller

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"metacel.dev/metacel/runtime/contract"
)

// A write is refused for good when the API server rejected it as one it rejects again: a write's
// error of an invalid or too large object, or a failure already terminal; not a conflict, not a
// raw API error no write made, not an access review's error.
func TestWhichFailuresAreRefusedForGood(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]any{"kind": "Secret", "metadata": map[string]any{"name": "s", "namespace": "ns"}}}
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s", field.ErrorList{field.Invalid(field.NewPath("data"), "x", "bad")})
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "s", errors.New("changed"))
	badReview := apierrors.NewBadRequest("malformed review")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"a write the API server found invalid", applyError("create", secret, invalid), true},
		{"a write that conflicted", applyError("create", secret, conflict), false},
		{"a terminal failure", terminal(errors.New("status: bad")), true},
		{"a write refused offline (Refuse)", &syncError{reason: contract.ReasonApplyFailed, terminal: true, err: errors.New("immutable")}, true},
		{"a raw invalid error, no write's", invalid, false},
		{"an access review's bad request", &syncError{reason: contract.ReasonAccessUnchecked, err: badReview}, false},
		{"wrapped further", fmt.Errorf("sync: %w", applyError("create", secret, invalid)), true},
		// the admission policy can be fixed without the object changing: retried with backoff
		{"a write a ValidatingAdmissionPolicy denied (Invalid, its default)", applyError("create", secret, apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "s",
			field.ErrorList{field.Invalid(field.NewPath(""), nil, "ValidatingAdmissionPolicy 'no-secrets' with binding 'all' denied request: secrets are not allowed")})), false},
		{"a write a webhook denied (400)", applyError("create", secret, apierrors.NewBadRequest(`admission webhook "check.example.com" denied the request: no`)), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := refusedForGood(tc.err); got != tc.want {
				t.Errorf("refusedForGood(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// A failure that cannot be retried, whose failure status could not be written (a conflict), is
// retried all the same: the parent's condition must still say it. Its reason is kept.
func TestAFailureWhoseStatusWriteFailedIsRetried(t *testing.T) {
	h := newHarness(t, widgetStatusPolicy, widgetCRD)
	statusWrites(h, apierrors.NewConflict(widgetsGVR.GroupResource(), "w", errors.New("changed")))
	refused := &syncError{reason: contract.ReasonApplyFailed, terminal: true, err: errors.New("the API server would refuse the update")}
	err := h.c.syncer.reporter.fail(t.Context(), widgetWithStatus(t, "red", nil), refused)
	var se *syncError
	switch {
	case err == nil || isTerminal(err):
		t.Fatalf("fail = %v (terminal %v), want a failure retried", err, isTerminal(err))
	case !errors.As(err, &se) || se.reason != contract.ReasonApplyFailed:
		t.Errorf("fail = %v, want the reason %s kept", err, contract.ReasonApplyFailed)
	}
}
