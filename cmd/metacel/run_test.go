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
