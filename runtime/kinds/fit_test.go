package kinds

import "testing"

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
