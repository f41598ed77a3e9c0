package rollout

import (
	"testing"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/policy"
)

// compiledNamed is a policy named name, with annotations on its own metadata.
func compiledNamed(name string, annotations map[string]string) *policy.Compiled {
	return &policy.Compiled{Policy: &policy.CompositePolicy{APIVersion: "metacel.dev/v1alpha1", Kind: "CompositePolicy",
		Metadata: policy.ObjectMeta{Name: name, Annotations: annotations},
		Spec:     policy.Spec{ParentResource: policy.ParentResource{APIVersion: "example.com/v1", Resource: "myapps"}}}}
}

func TestAVersionIsWhatThePolicyDoes(t *testing.T) {
	base := compiledNamed("myapp", nil)
	for _, tt := range []struct {
		name    string
		changed func(p *policy.CompositePolicy)
		same    bool
	}{
		{name: "an annotation the runtime does not read is the same version", same: true,
			changed: func(p *policy.CompositePolicy) { p.Metadata.Annotations = map[string]string{"team": "payments"} }},
		{name: "a label is the same version", same: true,
			changed: func(p *policy.CompositePolicy) {
				p.Metadata.Labels = map[string]string{"app.kubernetes.io/part-of": "shop"}
			}},
		{name: "an annotation the runtime reads is a new version",
			changed: func(p *policy.CompositePolicy) {
				p.Metadata.Annotations = map[string]string{contract.AnnotationAllowBreakingSchemaChange: "true"}
			}},
		{name: "a new name is a new version",
			changed: func(p *policy.CompositePolicy) { p.Metadata.Name = "other" }},
		{name: "a change of the spec is a new version",
			changed: func(p *policy.CompositePolicy) { p.Spec.ParentResource.Resource = "websites" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			changed := *base.Policy
			tt.changed(&changed)
			p := &policy.Compiled{Policy: &changed}
			if got := Version(p) == Version(base); got != tt.same {
				t.Errorf("the same version: %v, want %v", got, tt.same)
			}
		})
	}
}

func TestAVersionAnEarlierRuntimeNamedIsThePolicys(t *testing.T) {
	p := compiledNamed("myapp", map[string]string{"team": "payments"})
	other := compiledNamed("other", nil)
	for _, tt := range []struct {
		name    string
		version string
		want    bool
	}{
		{"its version", Version(p), true},
		{"the hash of the whole policy an earlier runtime wrote in records", legacyVersion(p), true},
		{"another policy's version", Version(other), false},
		{"another policy's earlier version", legacyVersion(other), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsVersionOf(tt.version, p); got != tt.want {
				t.Errorf("IsVersionOf = %v, want %v", got, tt.want)
			}
		})
	}
	if Version(p) == legacyVersion(p) {
		t.Errorf("an annotated policy's version is the whole policy's hash: the test tells nothing apart")
	}
}

func TestAPolicyWithoutLabelsOrAnnotationsKeepsItsEarlierVersion(t *testing.T) {
	p := compiledNamed("myapp", nil)
	if Version(p) != legacyVersion(p) {
		t.Errorf("Version = %s, an earlier runtime's %s: an upgrade would take every such policy for a new version", Version(p), legacyVersion(p))
	}
}
