package operator

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// eventually polls f until it succeeds, failing the test after timeout with what it waited for
// and f's last error.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	}); err != nil {
		t.Fatalf("waiting %s for %s: %v (last: %v)", timeout, what, err, last)
	}
}
