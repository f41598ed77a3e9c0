package testpolicies

import (
	"strings"
	"testing"
)

func TestYAML(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		fills  Fills
		panics string // "" when YAML returns the policy
	}{
		{"a policy without placeholders is returned from its first line", "gadget", nil, ""},
		{"a policy's placeholders are filled", "myapp-head", Fills{"RESOURCE": "pods"}, ""},
		{"an unknown policy is a mistake", "nonesuch", nil, `no policy "nonesuch"`},
		{"a fill the policy has no placeholder for is a mistake", "gadget", Fills{"RESOURCE": "pods"}, "has no placeholder __RESOURCE__"},
		{"a placeholder left unfilled is a mistake", "myapp-head", nil, "placeholder __RESOURCE__ is not filled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				msg, _ := r.(string)
				switch {
				case tc.panics == "" && r != nil:
					t.Errorf("panicked: %v", r)
				case tc.panics != "" && !strings.Contains(msg, tc.panics):
					t.Errorf("panic %v, want one saying %q", r, tc.panics)
				}
			}()
			text := YAML(tc.policy, tc.fills)
			if !strings.HasPrefix(text, "apiVersion: metacel.dev/v1alpha1\n") {
				t.Errorf("the policy does not start at its apiVersion:\n%s", text)
			}
			for _, value := range tc.fills {
				if !strings.Contains(text, value) {
					t.Errorf("the policy lacks the fill %q:\n%s", value, text)
				}
			}
		})
	}
}
