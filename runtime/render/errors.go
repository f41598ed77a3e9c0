package render

import (
	"errors"
	"fmt"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/expr"
)

// Error is a render failure: its Reason becomes the reason of the parent's Synced condition and
// its message the condition's message.
type Error struct {
	Reason string
	// Path is the policy field whose expression or output failed, when there is one.
	Path string
	Err  error
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func evalError(path string, err error) *Error {
	var fe *expr.FieldError
	if errors.As(err, &fe) {
		path = fe.Path(path) // the field of the template that failed
	}
	return &Error{Reason: contract.ReasonEvaluationError, Path: path, Err: err}
}

func childError(path string, format string, args ...any) *Error {
	return &Error{Reason: contract.ReasonInvalidChild, Path: path, Err: fmt.Errorf(format, args...)}
}
