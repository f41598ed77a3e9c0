package memo

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
)

const ns = "metacel-system"

// writes counts the create, update and patch actions a fake client received.
func writes(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch":
			n++
		}
	}
	return n
}

func TestAMemoIsRecalledAfterARestartInItsScopeOnly(t *testing.T) {
	ctx := t.Context()
	scope := Scope("policy v1")
	entries := Entries{1: 0, 2: 1, 1 << 63: 3}
	tests := []struct {
		name  string
		scope string
		want  Entries
	}{
		{"the same scope: every entry", scope, entries},
		{"another policy version: nothing", Scope("policy v2"), nil},
		{"no scope (no build ID): off", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			if err := NewStore(client, ns).Save(ctx, "myapp", scope, entries); err != nil {
				t.Fatal(err)
			}
			got, err := NewStore(client, ns).Load(ctx, "myapp", tt.scope)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("Load = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAMemoIsWrittenOnlyWhenItChanged(t *testing.T) {
	ctx := t.Context()
	scope := Scope("policy v1")
	tests := []struct {
		name       string
		before     func(*fake.Clientset, *Store)
		save       Entries
		wantWrites int
	}{
		{"none yet: written", func(*fake.Clientset, *Store) {}, Entries{1: 0}, 1},
		{"loaded after a restart, unchanged: not written", func(c *fake.Clientset, s *Store) {
			_ = NewStore(c, ns).Save(ctx, "myapp", scope, Entries{1: 0, 2: 1})
			_, _ = s.Load(ctx, "myapp", scope)
		}, Entries{2: 1, 1: 0}, 0},
		{"not loaded (another replica wrote it), unchanged: not written", func(c *fake.Clientset, _ *Store) {
			_ = NewStore(c, ns).Save(ctx, "myapp", scope, Entries{1: 0})
		}, Entries{1: 0}, 0},
		{"loaded, changed: written", func(c *fake.Clientset, s *Store) {
			_ = NewStore(c, ns).Save(ctx, "myapp", scope, Entries{1: 0})
			_, _ = s.Load(ctx, "myapp", scope)
		}, Entries{1: 0, 2: 0}, 1},
		{"of another scope, same entries: written", func(c *fake.Clientset, s *Store) {
			_ = NewStore(c, ns).Save(ctx, "myapp", Scope("policy v0"), Entries{1: 0})
			_, _ = s.Load(ctx, "myapp", scope)
		}, Entries{1: 0}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			s := NewStore(client, ns)
			tt.before(client, s)
			client.ClearActions()
			if err := s.Save(ctx, "myapp", scope, tt.save); err != nil {
				t.Fatal(err)
			}
			if got := writes(client); got != tt.wantWrites {
				t.Errorf("%d writes, want %d (actions %v)", got, tt.wantWrites, client.Actions())
			}
		})
	}
}

func TestAMemoIsNeverReadAsAPolicyAndNamesItsPolicy(t *testing.T) {
	client := fake.NewClientset()
	if err := NewStore(client, ns).Save(t.Context(), "myapp", Scope("v1"), Entries{1: 0}); err != nil {
		t.Fatal(err)
	}
	cm, err := client.CoreV1().ConfigMaps(ns).Get(t.Context(), ConfigMapName("myapp"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Labels) != 1 || cm.Labels[contract.LabelMemoOf] != "myapp" {
		t.Errorf("labels %v: want only %s=myapp (not a policy, not watched as a child of metacel's)", cm.Labels, contract.LabelMemoOf)
	}
}

func TestAMemoThatCannotBeReadIsAnError(t *testing.T) {
	client := fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName("myapp"), Namespace: ns},
		Data:       map[string]string{keyScope: Scope("v1")},
		BinaryData: map[string][]byte{keyEntries: []byte("12345678")},
	})
	got, err := NewStore(client, ns).Load(t.Context(), "myapp", Scope("v1"))
	if err == nil || got != nil {
		t.Errorf("Load = %v, %v; want an error", got, err)
	}
}

func TestAMemoHoldsAtMostMaxEntries(t *testing.T) {
	entries := Entries{}
	for i := range MaxEntries + 10 {
		entries[uint64(i)] = 0
	}
	data := encode(entries)
	if len(data) != MaxEntries*entrySize {
		t.Fatalf("%d bytes, want %d", len(data), MaxEntries*entrySize)
	}
	if len(data) > 1<<20 {
		t.Errorf("%d bytes: more than a ConfigMap holds", len(data))
	}
	got, err := decode(data)
	if err != nil || len(got) != MaxEntries {
		t.Errorf("decode: %d entries, %v", len(got), err)
	}
}

func TestANilStoreIsOff(t *testing.T) {
	s := NewStore(fake.NewClientset(), "")
	if s != nil {
		t.Fatal("a store without a namespace is not off")
	}
	if err := s.Save(t.Context(), "myapp", Scope("v1"), Entries{1: 0}); err != nil {
		t.Error(err)
	}
	if got, err := s.Load(t.Context(), "myapp", Scope("v1")); got != nil || err != nil {
		t.Errorf("Load = %v, %v", got, err)
	}
}

func TestTheScopeNamesTheBinary(t *testing.T) {
	if buildID() == "" {
		t.Fatal("no Go build ID read from the test binary")
	}
	a, again := Scope("a"), Scope("a")
	if a == Scope("b") || Scope("a", "b") == Scope("ab") || a != again {
		t.Error("scopes of different parts are equal, or of the same parts differ")
	}
}

func TestAMemoIsWrittenWithTheRuntimesOwnFieldManager(t *testing.T) {
	client := fake.NewClientset()
	if err := NewStore(client, ns).Save(t.Context(), "myapp", Scope("v1"), Entries{1: 0}); err != nil {
		t.Fatal(err)
	}
	var managers []string
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchActionImpl); ok {
			managers = append(managers, p.GetPatchOptions().FieldManager)
		}
	}
	if len(managers) != 1 || managers[0] != "metacel-memo" {
		t.Errorf("wrote the memo with field managers %v, want [metacel-memo], not the children's metacel", managers)
	}
}
