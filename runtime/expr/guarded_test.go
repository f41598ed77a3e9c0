package expr

import "testing"

func TestSelectsUnguardedFindsAReadCertainToFailOnAnObjectWithoutTheField(t *testing.T) {
	env, err := NewEnv(Scope{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		src  string
		want bool
	}{
		{"parent.status.state", true},
		{"parent.status", true},
		{"string(parent.status.replicas) + 'x'", true},
		{"parent.?status.?state.orValue('')", false},
		{"has(parent.status) ? parent.status.state : ''", false},
		{"parent.spec.size", false},
		{"parent.metadata.name", false},
	}
	for _, tc := range tests {
		if got := env.SelectsUnguarded(tc.src, "parent", "status"); got != tc.want {
			t.Errorf("SelectsUnguarded(%q) = %v, want %v", tc.src, got, tc.want)
		}
	}
}
