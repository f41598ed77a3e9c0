package kinds

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

func TestFitSaysEachProblemAtItsPathInFieldOrder(t *testing.T) {
	pod, err := SchemaOf(Info{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod"})
	if err != nil || pod == nil {
		t.Fatalf("schema of Pod: %v", err)
	}
	tests := []struct {
		name, object, want string // want: "" when the object fits
	}{
		{"a pod that fits", `{metadata: {name: x}, spec: {containers: [{name: app, image: x}]}}`, ""},
		{"an unknown field names the closest known one", `{spec: {containers: [{name: app, imgae: x}]}}`,
			`spec.containers[0].imgae: unknown field "imgae" of Pod spec.containers[0] (did you mean "image"?)`},
		{"a value of the wrong type is shown", `{spec: {containers: [{name: app}], hostNetwork: "yes"}}`,
			`spec.hostNetwork: "yes" is a string, but Pod spec.hostNetwork takes a boolean`},
		{"a fraction in a built-in kind's number (an integer)", `{spec: {containers: [{name: app}], terminationGracePeriodSeconds: 1.5}}`,
			`spec.terminationGracePeriodSeconds: 1.5 is not a whole number, but Pod spec.terminationGracePeriodSeconds takes an integer (a built-in kind has no fractions)`},
		{"a whole number written with a point fits", `{spec: {containers: [{name: app}], terminationGracePeriodSeconds: 2.0}}`, ""},
		{"a missing required field", `{spec: {containers: [{image: x}]}}`,
			`spec.containers[0]: required field "name" of Pod spec.containers[0] is missing`},
		{"two items of a keyed list with one key", `{spec: {containers: [{name: a}, {name: a}]}}`,
			`spec.containers[1]: has the same name as item 0: Pod spec.containers merges its items by name, so each needs its own`},
		{"a malformed quantity with the one meant", `{spec: {containers: [{name: a, resources: {limits: {memory: 1Gib}}}]}}`,
			`spec.containers[0].resources.limits.memory: "1Gib" is not a quantity, which Pod spec.containers[0].resources.limits.memory takes (did you mean "1Gi"?)`},
		{"problems in field order, at most max", `{zeta: 1, spec: {containers: [{name: a}], beta: 1, alpha: 1}}`,
			`spec.alpha: unknown field "alpha" of Pod spec; spec.beta: unknown field "beta" of Pod spec`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(tc.object), &obj); err != nil {
				t.Fatal(err)
			}
			err := pod.Fit(obj, 2)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Fit: %v, want nil", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("Fit: %v\nwant: %s", err, tc.want)
			}
		})
	}
}

func TestAKindTakesTheArticleOfItsFirstSound(t *testing.T) {
	tests := []struct{ kind, want string }{
		{"Pod", "a Pod"}, {"Ingress", "an Ingress"}, {"Endpoints", "an Endpoints"}, {"Event", "an Event"},
		{"HorizontalPodAutoscaler", "a HorizontalPodAutoscaler"}, {"ObjectBucket", "an ObjectBucket"},
		{"APIService", "an APIService"}, {"HTTPRoute", "an HTTPRoute"}, {"IPAddress", "an IPAddress"},
		{"URLMap", "a URLMap"}, {"CSIDriver", "a CSIDriver"}, {"User", "a User"}, {"UpdateRun", "an UpdateRun"},
	}
	for _, tc := range tests {
		if got := withArticle(tc.kind); got != tc.want {
			t.Errorf("withArticle(%q) = %q, want %q", tc.kind, got, tc.want)
		}
	}
}

func TestAMalformedQuantitySuggestsTheNearestOne(t *testing.T) {
	tests := []struct{ value, want string }{
		{"1Gib", `(did you mean "1Gi"?)`},
		{"512mi", `(did you mean "512Mi"?)`},
		{"500mb", `(did you mean "500M"?)`},
		{"2GB", `(did you mean "2G"?)`},
		{"1 Gi", `(did you mean "1Gi"?)`},
		{"1.5Gii", `(did you mean "1.5Gi"?)`},
		{"lots", `(e.g. "500m", "64Mi", 2)`},
		{"1Gibibytes", `(e.g. "500m", "64Mi", 2)`},
	}
	for _, tc := range tests {
		if got := quantityHint(tc.value); got != tc.want {
			t.Errorf("quantityHint(%q) = %s, want %s", tc.value, got, tc.want)
		}
	}
}
