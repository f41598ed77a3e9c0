package controller

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// eventually polls f until it succeeds, failing the test after 10 seconds with what it waited
// for and f's last error.
func eventually(t *testing.T, what string, f func() error) {
	const timeout = 10 * time.Second
	t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	}); err != nil {
		t.Fatalf("waiting %s for %s: %v (last: %v)", timeout, what, err, last)
	}
}
