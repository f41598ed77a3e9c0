package rollout

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
)

func TestStore(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	s := NewStore(client, "metacel-system")
	if rec, err := s.Get(ctx, "myapp"); err != nil || rec != nil {
		t.Fatalf("Get of a policy without record = %v, %v; want nil, nil", rec, err)
	}
	rec := Record{Phase: RollingOut, Stable: "aaa", StableUnit: "configmap/metacel-system/policy-myapp/myapp.yaml",
		StableSource: "apiVersion: metacel.dev/v1alpha1\n", Target: "bbb", Step: 1, StepStarted: time.Now()}
	if err := s.Put(ctx, "myapp", rec); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps("metacel-system").Get(ctx, ConfigMapName("myapp"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["metacel.dev/policy"] != "" || cm.Labels[contract.LabelRolloutOf] != "myapp" {
		t.Errorf("labels %v: a record is never read as a policy, and names its policy", cm.Labels)
	}

	restarted := NewStore(client, "metacel-system")
	got, err := restarted.Get(ctx, "myapp")
	if err != nil || got == nil {
		t.Fatalf("Get after a restart = %v, %v", got, err)
	}
	if !sameRecord(*got, rec) {
		t.Errorf("read back %+v, wrote %+v", *got, rec)
	}
	client.ClearActions()
	if err := restarted.Put(ctx, "myapp", *got); err != nil {
		t.Fatal(err)
	}
	if err := restarted.Put(ctx, "myapp", rec); err != nil {
		t.Fatal(err)
	}
	if writes := writesOf(client.Actions()); writes != 0 {
		t.Errorf("putting the record just read made %d writes, want 0", writes)
	}
	rec.Step = 2
	if err := restarted.Put(ctx, "myapp", rec); err != nil {
		t.Fatal(err)
	}
	if writes := writesOf(client.Actions()); writes != 1 {
		t.Errorf("putting a changed record made %d writes, want 1", writes)
	}
}

func TestARestartPuttingTheStoredRecordWritesNothing(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	rec := Record{Phase: Stable, Stable: "aaa", StableUnit: "dir/myapp.yaml", StableSource: "kind: CompositePolicy\n"}
	if err := NewStore(client, "metacel-system").Put(ctx, "myapp", rec); err != nil {
		t.Fatal(err)
	}
	client.ClearActions()
	// a policy without spec.rollout starts without reading its record, then records itself stable
	restarted := NewStore(client, "metacel-system")
	if err := restarted.Put(ctx, "myapp", rec); err != nil {
		t.Fatal(err)
	}
	if writes := writesOf(client.Actions()); writes != 0 {
		t.Errorf("a restarted runtime putting the record the ConfigMap holds made %d writes, want 0", writes)
	}
	rec.Stable = "bbb"
	if err := restarted.Put(ctx, "myapp", rec); err != nil {
		t.Fatal(err)
	}
	if writes := writesOf(client.Actions()); writes != 1 {
		t.Errorf("putting a new stable version made %d writes, want 1", writes)
	}
}

func TestARecordIsWrittenWithTheRuntimesOwnFieldManager(t *testing.T) {
	client := fake.NewClientset()
	if err := NewStore(client, "metacel-system").Put(t.Context(), "myapp", Record{Phase: Stable, Stable: "s"}); err != nil {
		t.Fatal(err)
	}
	if managers := fieldManagersOf(client.Actions()); len(managers) != 1 || managers[0] != "metacel-rollout" {
		t.Errorf("wrote the record with field managers %v, want [metacel-rollout], not the children's metacel", managers)
	}
}

func TestANilStoreIsOff(t *testing.T) {
	s := NewStore(fake.NewClientset(), "")
	if rec, err := s.Get(t.Context(), "p"); rec != nil || err != nil {
		t.Errorf("Get = %v, %v", rec, err)
	}
	if err := s.Put(t.Context(), "p", Record{Phase: Stable}); err != nil {
		t.Error(err)
	}
}

func writesOf(actions []k8stesting.Action) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			n++
		}
	}
	return n
}
