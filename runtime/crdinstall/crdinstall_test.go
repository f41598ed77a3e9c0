package crdinstall

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"metacel.dev/metacel/runtime/contract"
)

func websiteCRD(props map[string]apiextensionsv1.JSONSchemaProps, required ...string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "websites.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Website", Plural: "websites"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: props, Required: required},
					},
				}},
			}},
		},
	}
}

func desired(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, policy string) *unstructured.Unstructured {
	t.Helper()
	return declaring(t, crd, policy, "")
}

// declaring is desired with declaration (policy.ParentDeclaration), which a CRD carries when its
// parents convert through the webhook: crd does when declaration is not "".
func declaring(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, policy, declaration string) *unstructured.Unstructured {
	t.Helper()
	if declaration != "" {
		crd = converting(crd)
	}
	u, err := Desired(crd, policy, []byte(declaration))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// converting is crd with its parents converting through the runtime's webhook.
func converting(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	c := crd.DeepCopy()
	c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	return c
}

func TestDecide(t *testing.T) {
	v1 := websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string"}})
	v2 := websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string"}, "replicas": {Type: "integer"}})
	foreign := desired(t, v1, "website")
	foreign.SetLabels(nil)
	foreign.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply"}, {Manager: "kube-apiserver", Subresource: "status"}})
	none := func(string) bool { return false }
	leftBehind := desired(t, v1, "website")
	leftBehind.SetAnnotations(map[string]string{contract.AnnotationParentSchemaHash: leftBehind.GetAnnotations()[contract.AnnotationParentSchemaHash],
		contract.AnnotationParentDeclaration: `{"kind":"CompositePolicy"}`})
	tests := []struct {
		name     string
		existing *unstructured.Unstructured
		desired  *unstructured.Unstructured
		running  func(string) bool
		want     Action
		why      []string
	}{
		{name: "no CRD: create it", desired: desired(t, v1, "website"), running: none, want: Create},
		{name: "the CRD the declaration gives: leave it", existing: desired(t, v1, "website"), desired: desired(t, v1, "website"), running: none, want: Leave},
		{name: "a new declaration: update", existing: desired(t, v1, "website"), desired: desired(t, v2, "website"), running: none, want: Update},
		{name: "the declaration its parents convert with, carried: leave it", existing: declaring(t, v1, "website", `{"kind":"CompositePolicy"}`),
			desired: declaring(t, v1, "website", `{"kind":"CompositePolicy"}`), running: none, want: Leave},
		{name: "the CRD the declaration gives, not carrying what its parents convert with: update", existing: desired(t, converting(v1), "website"),
			desired: declaring(t, v1, "website", `{"kind":"CompositePolicy"}`), running: none, want: Update},
		{name: "the CRD the declaration gives, carrying other conversions: update", existing: declaring(t, v1, "website", `{"kind":"CompositePolicy","old":true}`),
			desired: declaring(t, v1, "website", `{"kind":"CompositePolicy"}`), running: none, want: Update},
		// server-side apply cannot remove an annotation another manager also owns (the CRD applied
		// by hand from metacel crd once): a declaration left behind once the parent has one version
		// converts nothing (its hash is not the CRD's), and an update would change nothing, then
		// again at every load, the policy waiting for a CRD event that never comes
		{name: "a declaration left behind on the CRD the declaration gives: leave it", existing: leftBehind,
			desired: desired(t, v1, "website"), running: none, want: Leave},
		{name: "another owner's CRD: refuse, naming the owner and the hand-over", existing: foreign, desired: desired(t, v1, "website"), running: none, want: Refuse,
			why: []string{`"kubectl-client-side-apply"`, "kubectl label crd websites.example.com metacel.dev/installed-by=website"}},
		{name: "installed for another policy that runs: refuse", existing: desired(t, v1, "site"), desired: desired(t, v1, "website"),
			running: func(p string) bool { return p == "site" }, want: Refuse, why: []string{`policy "site"`}},
		{name: "installed for a policy that runs no more: take it over", existing: desired(t, v1, "site"), desired: desired(t, v1, "website"), running: none, want: Update},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.existing, tt.desired, tt.running)
			if got.Action != tt.want {
				t.Fatalf("Decide = %s (%s), want %s", got.Action, got.Why, tt.want)
			}
			for _, w := range tt.why {
				if !strings.Contains(got.Why, w) {
					t.Errorf("Why = %q, want it to hold %q", got.Why, w)
				}
			}
		})
	}
}

func TestDesiredIsStable(t *testing.T) {
	a := desired(t, websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string"}, "b": {Type: "string"}}), "website")
	b := desired(t, websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"b": {Type: "string"}, "html": {Type: "string"}}), "website")
	if a.GetAnnotations()[contract.AnnotationParentSchemaHash] != b.GetAnnotations()[contract.AnnotationParentSchemaHash] {
		t.Errorf("one declaration, two hashes: %v, %v", a.GetAnnotations(), b.GetAnnotations())
	}
	if a.GetLabels()[contract.LabelInstalledBy] != "website" {
		t.Errorf("labels = %v, want %s=website", a.GetLabels(), contract.LabelInstalledBy)
	}
	converts := converting(websiteCRD(map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string"}}))
	carrying, bare := declaring(t, converts, "website", `{"kind":"CompositePolicy"}`), desired(t, converts, "website")
	if carrying.GetAnnotations()[contract.AnnotationParentSchemaHash] != bare.GetAnnotations()[contract.AnnotationParentSchemaHash] {
		t.Errorf("the declaration a CRD carries changes its hash: %v, %v", carrying.GetAnnotations(), bare.GetAnnotations())
	}
	oneVersion, err := Desired(websiteCRD(nil), "website", []byte(`{"kind":"CompositePolicy"}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, u := range map[string]*unstructured.Unstructured{
		"a CRD of one version":            oneVersion,
		"a CRD with a larger declaration": declaring(t, websiteCRD(nil), "website", strings.Repeat("x", maxDeclarationBytes+1)),
	} {
		if _, carried := u.GetAnnotations()[contract.AnnotationParentDeclaration]; carried {
			t.Errorf("%s carries the policy's declaration", name)
		}
	}
	if _, ok := a.Object["status"]; ok {
		t.Errorf("the applied CRD holds a status: %v", a.Object["status"])
	}
}

func TestBreaks(t *testing.T) {
	parent := func(spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Website",
			"metadata": map[string]any{"name": "hello", "namespace": "default"}, "spec": spec}
	}
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	tests := []struct {
		name    string
		props   map[string]apiextensionsv1.JSONSchemaProps
		require []string
		spec    map[string]any
		want    []string // problems, by a part of each; none: it survives
	}{
		{name: "a new optional field breaks nothing", props: map[string]apiextensionsv1.JSONSchemaProps{"html": str, "image": str}, spec: map[string]any{"html": "x"}},
		{name: "a removed field nobody uses breaks nothing", props: map[string]apiextensionsv1.JSONSchemaProps{"html": str}, spec: map[string]any{"html": "x"}},
		{name: "a removed field a parent uses would be pruned", props: map[string]apiextensionsv1.JSONSchemaProps{"html": str},
			spec: map[string]any{"html": "x", "title": "t"}, want: []string{"spec.title: would be removed"}},
		{name: "a narrowed type", props: map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "integer"}},
			spec: map[string]any{"html": "x"}, want: []string{"spec.html"}},
		{name: "a new required field", props: map[string]apiextensionsv1.JSONSchemaProps{"html": str, "image": str}, require: []string{"image"},
			spec: map[string]any{"html": "x"}, want: []string{"spec.image: Required value"}},
		{name: "a new required field with a default breaks nothing: the API server defaults what it reads",
			props:   map[string]apiextensionsv1.JSONSchemaProps{"html": str, "image": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"nginx"`)}}},
			require: []string{"image"}, spec: map[string]any{"html": "x"}},
		{name: "a tighter bound a parent breaks", props: map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string", MaxLength: ptr.To[int64](3)}},
			spec: map[string]any{"html": "hello"}, want: []string{"spec.html"}},
		{name: "a tighter bound no parent breaks", props: map[string]apiextensionsv1.JSONSchemaProps{"html": {Type: "string", MaxLength: ptr.To[int64](10)}},
			spec: map[string]any{"html": "hello"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parent(tt.spec)
			schema := websiteCRD(tt.props, tt.require...).Spec.Versions[0].Schema.OpenAPIV3Schema
			breaks, total, err := Breaks(schema, []map[string]any{p}, 5)
			if err != nil {
				t.Fatal(err)
			}
			if len(tt.want) == 0 {
				if total != 0 {
					t.Fatalf("Breaks = %v, want none", breaks)
				}
				return
			}
			if total != 1 || breaks[0].Parent != "default/hello" {
				t.Fatalf("Breaks = %v (%d), want default/hello", breaks, total)
			}
			all := strings.Join(breaks[0].Problems, "; ")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems %q, want one holding %q", all, w)
				}
			}
			if _, ok := p["spec"].(map[string]any)["title"]; tt.spec["title"] != nil && !ok {
				t.Error("Breaks modified the parent")
			}
		})
	}
}

func TestBreakingMessageNamesParentsAndTheWayOut(t *testing.T) {
	msg := BreakingMessage("websites.example.com", []Break{{Parent: "default/a", Problems: []string{".spec.title: would be removed"}}}, 3)
	for _, want := range []string{"3 stored parent(s)", "default/a: .spec.title: would be removed", "and 2 more", contract.AnnotationAllowBreakingSchemaChange, "keeps serving"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestAStoredVersionCannotStopBeingServed(t *testing.T) {
	existing := func(stored ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		_ = unstructured.SetNestedStringSlice(u.Object, stored, "status", "storedVersions")
		return u
	}
	version := func(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage}
	}
	crd := func(versions ...apiextensionsv1.CustomResourceDefinitionVersion) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: versions}}
	}
	tests := []struct {
		name     string
		existing *unstructured.Unstructured
		crd      *apiextensionsv1.CustomResourceDefinition
		want     []string
	}{
		{"parents still stored at v1alpha1, which stops being served", existing("v1alpha1", "v1"), crd(version("v1", true, true), version("v1alpha1", false, false)), []string{"v1alpha1"}},
		{"parents still stored at v1alpha1, which is removed", existing("v1alpha1", "v1"), crd(version("v1", true, true)), []string{"v1alpha1"}},
		{"storedVersions trimmed: v1alpha1 may go", existing("v1"), crd(version("v1", true, true), version("v1alpha1", false, false)), nil},
		{"a version still served and stored", existing("v1alpha1", "v1"), crd(version("v1", true, true), version("v1alpha1", true, false)), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := StoredVersionsDropped(tc.existing, tc.crd); !slices.Equal(got, tc.want) {
				t.Errorf("StoredVersionsDropped() = %v, want %v", got, tc.want)
			}
		})
	}
	if msg := DroppedVersionsMessage("caches.example.com", []string{"v1alpha1"}); !strings.Contains(msg, `"v1alpha1"`) || !strings.Contains(msg, "storedVersions") {
		t.Errorf("DroppedVersionsMessage() = %q", msg)
	}
}
