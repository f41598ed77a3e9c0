package rollout

import (
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
)

// policyConfigMap is a labelled policy ConfigMap, with an annotation of its authors.
func policyConfigMap() (*corev1.ConfigMap, *corev1.ObjectReference) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "policy-myapp", Namespace: "metacel-system", UID: "uid-1",
		Labels:      map[string]string{"metacel.dev/policy": "true"},
		Annotations: map[string]string{"team": "a"},
	}, Data: map[string]string{"myapp.yaml": "kind: CompositePolicy\n"}}
	return cm, &corev1.ObjectReference{Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name, UID: cm.UID}
}

func annotationOf(t *testing.T, client *fake.Clientset) map[string][]string {
	t.Helper()
	cm, err := client.CoreV1().ConfigMaps("metacel-system").Get(t.Context(), "policy-myapp", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Annotations["team"] != "a" || cm.Data["myapp.yaml"] == "" {
		t.Errorf("anchoring changed what it does not own: %v, %v", cm.Annotations, cm.Data)
	}
	var out map[string][]string
	if err := json.Unmarshal([]byte(cm.Annotations[contract.AnnotationLoadedVersions]), &out); err != nil {
		t.Fatalf("annotation %q: %v", cm.Annotations[contract.AnnotationLoadedVersions], err)
	}
	return out
}

func TestARestartedRuntimeTrustsTheVersionsAnchoredOnThePolicysConfigMap(t *testing.T) {
	ctx := t.Context()
	cm, ref := policyConfigMap()
	client := fake.NewClientset(cm)
	s := NewStore(client, "metacel-system")
	s.NoteLoaded("myapp", "s")
	s.NoteLoaded("myapp", "t", "s")
	s.NoteLoaded("other", "o")
	if err := s.Anchor(ctx, ref, "myapp", "s", "t"); err != nil {
		t.Fatal(err)
	}
	if err := s.Anchor(ctx, ref, "other", "o"); err != nil {
		t.Fatal(err)
	}
	if got := annotationOf(t, client); !slices.Equal(got["myapp"], []string{"s", "t"}) || !slices.Equal(got["other"], []string{"o"}) {
		t.Errorf("annotation %v, want myapp [s t] and other [o]", got)
	}
	if managers := fieldManagersOf(client.Actions()); !slices.Equal(managers, []string{FieldManager, FieldManager}) {
		t.Errorf("wrote with field managers %v, want %q twice", managers, FieldManager)
	}

	restarted := NewStore(client, "metacel-system")
	restarted.NoteLoaded("myapp", "u")
	loaded, err := restarted.Loaded(ctx, ref, "myapp")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(loaded)
	if !slices.Equal(loaded, []string{"s", "t", "u"}) {
		t.Errorf("Loaded after a restart = %v, want this process's u and the anchored s and t", loaded)
	}
}

func TestAnchoringWhatIsAnchoredMakesNoRequest(t *testing.T) {
	ctx := t.Context()
	cm, ref := policyConfigMap()
	client := fake.NewClientset(cm)
	s := NewStore(client, "metacel-system")
	s.NoteLoaded("myapp", "s")
	if err := s.Anchor(ctx, ref, "myapp", "s"); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	if err := s.Anchor(ctx, ref, "myapp", "s"); err != nil {
		t.Fatal(err)
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("anchoring an anchored version made %d requests, want 0", n)
	}

	restarted := NewStore(client, "metacel-system")
	restarted.NoteLoaded("myapp", "s")
	client.ClearActions()
	if err := restarted.Anchor(ctx, ref, "myapp", "s"); err != nil {
		t.Fatal(err)
	}
	if writes := writesOf(client.Actions()); writes != 0 {
		t.Errorf("a restart anchoring the version the ConfigMap lists made %d writes, want 0", writes)
	}
}

func TestOnlyVersionsLoadedAreAnchored(t *testing.T) {
	ctx := t.Context()
	cm, ref := policyConfigMap()
	client := fake.NewClientset(cm)
	s := NewStore(client, "metacel-system")
	s.NoteLoaded("myapp", "s")
	if err := s.Anchor(ctx, ref, "myapp", "s", "never-loaded"); err != nil {
		t.Fatal(err)
	}
	if got := annotationOf(t, client)["myapp"]; !slices.Equal(got, []string{"s"}) {
		t.Errorf("anchored %v, want [s]: a version this process did not load is never listed", got)
	}
}

func TestAPolicyFromAFileIsTrustedForWhatThisProcessLoadedOnly(t *testing.T) {
	client := fake.NewClientset()
	s := NewStore(client, "metacel-system")
	s.NoteLoaded("myapp", "s")
	if err := s.Anchor(t.Context(), nil, "myapp", "s"); err != nil {
		t.Fatal(err)
	}
	loaded, err := s.Loaded(t.Context(), nil, "myapp")
	if err != nil || !slices.Equal(loaded, []string{"s"}) {
		t.Errorf("Loaded = %v, %v; want [s]", loaded, err)
	}
	if n := len(client.Actions()); n != 0 {
		t.Errorf("a policy from a file made %d requests, want 0", n)
	}
}

func TestAnAnnotationThatIsNotTheRuntimesTrustsNothing(t *testing.T) {
	cm, ref := policyConfigMap()
	cm.Annotations[contract.AnnotationLoadedVersions] = "s,t"
	loaded, err := NewStore(fake.NewClientset(cm), "metacel-system").Loaded(t.Context(), ref, "myapp")
	if err != nil || len(loaded) != 0 {
		t.Errorf("Loaded = %v, %v; want none", loaded, err)
	}
}

func TestANilStoreTrustsAndAnchorsNothing(t *testing.T) {
	var s *Store
	s.NoteLoaded("myapp", "s")
	_, ref := policyConfigMap()
	if loaded, err := s.Loaded(t.Context(), ref, "myapp"); loaded != nil || err != nil {
		t.Errorf("Loaded = %v, %v", loaded, err)
	}
	if err := s.Anchor(t.Context(), ref, "myapp", "s"); err != nil {
		t.Error(err)
	}
}

// fieldManagersOf returns the field manager of each patch.
func fieldManagersOf(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		if p, ok := a.(k8stesting.PatchActionImpl); ok {
			out = append(out, p.GetPatchOptions().FieldManager)
		}
	}
	return out
}
