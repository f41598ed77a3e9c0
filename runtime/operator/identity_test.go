package operator

import (
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

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
			ids := &identities{namespace: "metacel-system", allowRuntime: tt.allowRuntime, self: func() string { return "system:serviceaccount:metacel-system:metacel" }}
			err := ids.check(tt.policy)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("check: %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestAPolicyNamingNoServiceAccountAsksNotWhoTheRuntimeIs(t *testing.T) {
	ids := &identities{namespace: "metacel-system", allowRuntime: true, self: func() string {
		t.Error("asked who the runtime is (a request to the API server at each start) for a policy that names no ServiceAccount")
		return ""
	}}
	p := &policy.Compiled{Policy: &policy.CompositePolicy{Metadata: policy.ObjectMeta{Name: "app"}}}
	if err := ids.check(p); err != nil {
		t.Fatal(err)
	}
}

func TestTokenSubject(t *testing.T) {
	jwt := func(claims string) string {
		return "e30." + base64.RawURLEncoding.EncodeToString([]byte(claims)) + ".sig"
	}
	tests := []struct {
		name, token, want string
	}{
		{"a ServiceAccount's token names it", jwt(`{"sub":"system:serviceaccount:metacel-system:metacel"}`), "system:serviceaccount:metacel-system:metacel"},
		{"another subject is not a ServiceAccount", jwt(`{"sub":"alice"}`), ""},
		{"no token", "", ""},
		{"not a JWT", "opaque-token", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tokenSubject(&rest.Config{BearerToken: tt.token}); got != tt.want {
				t.Errorf("tokenSubject: %q, want %q", got, tt.want)
			}
		})
	}
}
