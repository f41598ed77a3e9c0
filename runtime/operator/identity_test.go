package operator

import (
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/policy"
)

func TestIdentitiesCheck(t *testing.T) {
	named := func(sa string) *policy.Compiled {
		return &policy.Compiled{Policy: &policy.CompositePolicy{Metadata: policy.ObjectMeta{Name: "app"}, Spec: policy.Spec{ServiceAccountName: sa}}}
	}
	tests := []struct {
		name         string
		policy       *policy.Compiled
		allowRuntime bool
		wantErr      string
	}{
		{"a policy naming its ServiceAccount loads", named("app-policy"), false, ""},
		{"a policy naming none is refused by default", named(""), false, "spec.serviceAccountName: is required"},
		{"the refusal says how to fix it", named(""), false, "--allow-policies-without-service-account"},
		{"a policy naming none acts as the runtime when allowed", named(""), true, ""},
		{"a policy naming the runtime's own ServiceAccount is refused", named("metacel"), true, "is the runtime's own ServiceAccount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := &identities{namespace: "metacel-system", allowRuntime: tt.allowRuntime, self: "system:serviceaccount:metacel-system:metacel"}
			err := ids.check(tt.policy)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("check: %v, want %q", err, tt.wantErr)
			}
		})
	}
}
