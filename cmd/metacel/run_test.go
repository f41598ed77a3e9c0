package main

import (
	"errors"
	"strings"
	"testing"
)

// TestRunRefusesWithoutANamespaceForItsRecords: a runtime that would have nowhere to keep its
// ledger (policies from files only, no namespace of its own) refuses to start, before it reaches
// the cluster, saying what is wrong and how to fix it.
func TestRunRefusesWithoutANamespaceForItsRecords(t *testing.T) {
	tests := []struct {
		name    string
		env     string
		args    []string
		wantErr string // "" when the flags are accepted (the run then fails on the kubeconfig)
	}{
		{
			name:    "policies from files only, no namespace of its own",
			args:    []string{"--policy-namespace="},
			wantErr: errNoRuntimeNamespace.Error(),
		},
		{
			name: "policies from files only, POD_NAMESPACE from the downward API",
			env:  "metacel-system",
			args: []string{"--policy-namespace="},
		},
		{
			name: "policies from files only, --runtime-namespace",
			args: []string{"--policy-namespace=", "--runtime-namespace=metacel-system"},
		},
		{
			name: "policies from files only, leader election in a namespace",
			args: []string{"--policy-namespace=", "--leader-elect", "--leader-election-namespace=metacel-system"},
		},
		{
			name:    "policies from files only, leader election without a namespace",
			args:    []string{"--policy-namespace=", "--leader-elect"},
			wantErr: "--leader-elect needs --leader-election-namespace",
		},
	}
	sa := serviceAccountNamespace
	serviceAccountNamespace = "/nonexistent" // as outside a Pod
	t.Cleanup(func() { serviceAccountNamespace = sa })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tt.env)
			args := append([]string{"run", "--policy-dir", "testdata", "--kubeconfig", "/nonexistent/kubeconfig"}, tt.args...)
			_, _, err := runCLI(t, args...)
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
			case tt.wantErr == "" && (err == nil || errors.Is(err, errNoRuntimeNamespace) || !strings.Contains(err.Error(), "kubeconfig")):
				t.Fatalf("got %v, want the flags accepted and the missing kubeconfig refused", err)
			}
		})
	}
}

// TestRunRefusesShardTimingsThatCannotWork: a sharded replica refuses, before it reaches the
// cluster, Lease timings under which it would refuse every write (a Lease under a second,
// advertised as 0 s), sync slots it may no longer write (a renew deadline past 90 % of the
// Lease), or never renew in time (an interval of 0, or not under the deadline).
func TestRunRefusesShardTimingsThatCannotWork(t *testing.T) {
	tests := []runFlagsCase{
		{name: "the defaults"},
		{
			name: "a Lease of a second",
			args: []string{"--shard-lease-duration=1s", "--shard-renew-deadline=900ms", "--shard-renew-interval=300ms"},
		},
		{
			name:    "a Lease under a second",
			args:    []string{"--shard-lease-duration=900ms", "--shard-renew-deadline=600ms", "--shard-renew-interval=200ms"},
			wantErr: "--shard-lease-duration (900ms) must be at least 1s",
		},
		{
			name:    "a renew deadline past 90% of the Lease's whole seconds",
			args:    []string{"--shard-lease-duration=10.5s", "--shard-renew-deadline=9500ms"},
			wantErr: "--shard-renew-deadline (9.5s) must be at most 90% of --shard-lease-duration in whole seconds (9s)",
		},
		{
			name:    "a renew deadline of the Lease's duration",
			args:    []string{"--shard-lease-duration=10s", "--shard-renew-deadline=10s"},
			wantErr: "--shard-renew-deadline (10s) must be at most 90%",
		},
		{
			name:    "a renew interval of 0",
			args:    []string{"--shard-renew-interval=0s"},
			wantErr: "--shard-renew-interval (0s) must be more than 0",
		},
		{
			name:    "a renew interval of the deadline",
			args:    []string{"--shard-renew-deadline=5s", "--shard-renew-interval=5s"},
			wantErr: "--shard-renew-interval (5s) must be less than --shard-renew-deadline (5s)",
		},
	}
	checkRunFlags(t, "--shards=auto", tests)
}

// TestRunRefusesLeaderElectionTimingsThatCannotWork: a replica with --leader-elect refuses, before
// it reaches the cluster, Lease timings under which it would refuse every write as the leader (a
// Lease under a second is advertised as 0 s, the write fence's window then 0) and a standby would
// take the Lease over at once, and those client-go's elector refuses only once connected.
func TestRunRefusesLeaderElectionTimingsThatCannotWork(t *testing.T) {
	tests := []runFlagsCase{
		{name: "the defaults"},
		{
			name: "a Lease of a second",
			args: []string{"--leader-election-lease-duration=1s", "--leader-election-renew-deadline=800ms", "--leader-election-retry-period=200ms"},
		},
		{
			name:    "a Lease under a second",
			args:    []string{"--leader-election-lease-duration=900ms", "--leader-election-renew-deadline=600ms", "--leader-election-retry-period=200ms"},
			wantErr: "--leader-election-lease-duration (900ms) must be at least 1s",
		},
		{
			name:    "a renew deadline of the Lease's duration",
			args:    []string{"--leader-election-lease-duration=10s", "--leader-election-renew-deadline=10s"},
			wantErr: "--leader-election-renew-deadline (10s) must be less than --leader-election-lease-duration (10s)",
		},
		{
			name:    "a retry period of 0",
			args:    []string{"--leader-election-retry-period=0s"},
			wantErr: "--leader-election-retry-period (0s) must be more than 0",
		},
		{
			name:    "a renew deadline within 1.2 retry periods",
			args:    []string{"--leader-election-renew-deadline=5s", "--leader-election-retry-period=5s"},
			wantErr: "--leader-election-renew-deadline (5s) must be more than 1.2 × --leader-election-retry-period (5s)",
		},
	}
	checkRunFlags(t, "--leader-elect", tests)
}

// runFlagsCase is a set of run's flags, and the error run gives before it reaches the cluster.
type runFlagsCase struct {
	name    string
	args    []string
	wantErr string // "" when the flags are accepted (the run then fails on the kubeconfig)
}

// checkRunFlags runs `metacel run` with a policy namespace, mode (--shards=auto, --leader-elect)
// and each case's flags, and no kubeconfig: a case is refused with its error, or accepted and the
// missing kubeconfig refused.
func checkRunFlags(t *testing.T, mode string, tests []runFlagsCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--policy-namespace=metacel-system", mode, "--kubeconfig", "/nonexistent/kubeconfig"}, tt.args...)
			_, _, err := runCLI(t, args...)
			switch {
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
			case tt.wantErr == "" && (err == nil || !strings.Contains(err.Error(), "kubeconfig")):
				t.Fatalf("got %v, want the flags accepted and the missing kubeconfig refused", err)
			}
		})
	}
}
