package ledger

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestTheLedgerRemembersAPolicysChildResources(t *testing.T) {
	l := New(fake.NewClientset(), "metacel-system")
	deployments := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configmaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	steps := []struct {
		name   string
		record []schema.GroupVersionResource
		want   string
	}{
		{"a policy never recorded has none", nil, ""},
		{"recorded resources are read back, sorted", []schema.GroupVersionResource{deployments, configmaps}, "/v1/configmaps,apps/v1/deployments"},
		{"a later record replaces it", []schema.GroupVersionResource{configmaps}, "/v1/configmaps"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.record != nil {
				if err := l.RecordChildResources(t.Context(), "p", st.record); err != nil {
					t.Fatal(err)
				}
			}
			got, err := l.ChildResources(t.Context(), "p")
			if err != nil {
				t.Fatal(err)
			}
			if s := formatResources(got); s != st.want {
				t.Errorf("recorded %q, want %q", s, st.want)
			}
		})
	}
	var off *Ledger
	if got, err := off.ChildResources(t.Context(), "p"); got != nil || err != nil || off.RecordChildResources(t.Context(), "p", nil) != nil {
		t.Error("a ledger that is off knows nothing and records nothing")
	}
}

func TestTheLedgerWritesWithTheRuntimesOwnFieldManager(t *testing.T) {
	client := fake.NewClientset()
	l := New(client, "metacel-system")
	configmaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	for _, gvrs := range [][]schema.GroupVersionResource{{configmaps}, {configmaps, secrets}} {
		if err := l.RecordChildResources(t.Context(), "p", gvrs); err != nil {
			t.Fatal(err)
		}
	}
	var managers []string
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case k8stesting.CreateActionImpl:
			managers = append(managers, a.CreateOptions.FieldManager)
		case k8stesting.UpdateActionImpl:
			managers = append(managers, a.UpdateOptions.FieldManager)
		}
	}
	if want := []string{"metacel-ledger", "metacel-ledger"}; !slices.Equal(managers, want) {
		t.Errorf("wrote the Lease (create, update) with field managers %v, want %v, not the children's metacel", managers, want)
	}
}

// The policy set ranks two policies that claim one parent resource by when each first ran: a
// policy whose controller has recorded its child resources has run, one with no entry never has.
func TestTheLedgerSaysWhenAPolicyFirstRan(t *testing.T) {
	l := New(fake.NewClientset(), "metacel-system")
	if _, ok, err := l.FirstRecorded(t.Context(), "p"); ok || err != nil {
		t.Fatalf("a policy never recorded: ran %v (err %v), want false", ok, err)
	}
	if err := l.RecordChildResources(t.Context(), "p", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := l.FirstRecorded(t.Context(), "p"); !ok || err != nil {
		t.Errorf("a policy recorded: ran %v (err %v), want true", ok, err)
	}
	var off *Ledger
	if _, ok, err := off.FirstRecorded(t.Context(), "p"); ok || err != nil {
		t.Error("a ledger that is off knows of no policy that ran")
	}
}
