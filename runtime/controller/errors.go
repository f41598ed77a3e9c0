package controller

import (
	"context"
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/render"
)

// syncError is why a sync failed: the reason its parent's Synced condition reports, and whether
// retrying the same inputs can fix it. A terminal error cannot (controller-runtime's
// reconcile.TerminalError): the parent is not requeued, it waits for an input to change (an event
// of the parent, a child or a related object). Any other error is retried with backoff. A
// write the API server refuses for good (refusedForGood) makes a sync's failure terminal when the
// reporter reports it on the parent (reporter.fail); cleanup's writes, which no parent condition
// reports, are retried. An error that is no syncError (a render error, a decode error) is
// terminal when reported (reporter.fail), else retried.
type syncError struct {
	// reason is the condition reason (contract.Reason*); "" leaves it to the reporter (status.go)
	reason   string
	err      error
	terminal bool
}

func (e *syncError) Error() string { return e.err.Error() }
func (e *syncError) Unwrap() error { return e.err }

// terminal marks err as one that retrying the same inputs cannot fix, keeping the reason it
// carries.
func terminal(err error) error {
	var se *syncError
	if !errors.As(err, &se) {
		return &syncError{err: err, terminal: true}
	}
	if se.terminal {
		return err
	}
	return &syncError{reason: se.reason, err: err, terminal: true}
}

// isTerminal reports whether err is terminal: the parent waits for an input to change.
func isTerminal(err error) bool {
	var se *syncError
	return errors.As(err, &se) && se.terminal
}

// refusedForGood reports whether err is a write the API server refused and refuses again when it
// is sent again: a terminal error, or a write's error (applyError) that the API server rejected as
// invalid or too large (isPermanent). A request refused by something else (an access review) is
// not.
func refusedForGood(err error) bool {
	var se *syncError
	return errors.As(err, &se) && (se.terminal || se.reason == contract.ReasonApplyFailed && isPermanent(se.err))
}

// allRefusedForGood reports whether every failure err joins (childWriter.write goes on past a
// failed child) is refused for good: one that may pass when retried retries the sync.
func allRefusedForGood(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok { // the join itself, not one it wraps
		for _, e := range joined.Unwrap() {
			if !allRefusedForGood(e) {
				return false
			}
		}
		return true
	}
	return refusedForGood(err)
}

// isConflict reports whether err is a ChildConflict: an object someone else owns holds a child's
// name (retried with backoff, logged quieter than other failures).
func isConflict(err error) bool {
	var se *syncError
	return errors.As(err, &se) && se.reason == contract.ReasonChildConflict
}

func isRenderError(err error) bool {
	var re *render.Error
	return errors.As(err, &re)
}

// reasonWriteFenced is the reason of a write that the write fence refused (package operator):
// no error of the sync's own.
const reasonWriteFenced = "WriteFenced"

// isPermanent classifies an API error: a request the server rejects as invalid, or as larger
// than it can ever store, is rejected again when sent again.
func isPermanent(err error) bool {
	return (apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || isTooLarge(err)) && !deniedByAdmission(err)
}

// deniedByAdmission reports whether an error is a denial of admission (a ValidatingAdmissionPolicy,
// whose denial is Invalid by default, or a webhook), not of the object's schema: the policy or the
// webhook can change without the object changing, so the write is retried with backoff, not left
// until an input changes. The API server words them so (k8s.io/apiserver's admission plugins).
func deniedByAdmission(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "denied request:") || strings.Contains(msg, "denied the request")
}

// isTransient reports whether err is a request that failed on the way and may succeed when sent
// again: the API server busy (429), in trouble (500 other than too large, 503, 504), timed
// out, or the connection lost.
func isTransient(err error) bool {
	switch {
	case isTooLarge(err):
		return false
	case apierrors.IsTooManyRequests(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err),
		apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err):
		return true
	}
	return utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) ||
		errors.Is(err, context.DeadlineExceeded)
}

// isTooLarge reports whether the API server refused an object for its size: the request body
// limit (413), or etcd's request limit, which comes back as an internal error (500).
func isTooLarge(err error) bool {
	return apierrors.IsRequestEntityTooLargeError(err) ||
		apierrors.IsInternalError(err) && strings.Contains(err.Error(), "request is too large")
}
