package apistore

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/retry"
)

const (
	ns      = "metacel-system"
	name    = "metacel-thing"
	manager = "metacel-test"
)

var configmaps = schema.GroupResource{Resource: "configmaps"}

func configMap(rv, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: rv}, Data: map[string]string{"k": value}}
}

// failWith makes the fake API server answer every request of verb with err.
func failWith(client *fake.Clientset, verb string, err error) {
	client.PrependReactor(verb, "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, err
	})
}

// request is a request the fake API server received: its verb and its field manager.
type request struct{ verb, manager string }

func requests(client *fake.Clientset) []request {
	var out []request
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case k8stesting.CreateActionImpl:
			out = append(out, request{"create", a.CreateOptions.FieldManager})
		case k8stesting.UpdateActionImpl:
			out = append(out, request{"update", a.UpdateOptions.FieldManager})
		default:
			out = append(out, request{a.GetVerb(), ""})
		}
	}
	return out
}

func TestGet(t *testing.T) {
	tests := []struct {
		name     string
		stored   *corev1.ConfigMap
		fail     error
		wantNone bool
		wantErr  bool
	}{
		{"an object is read", configMap("", "v"), nil, false, false},
		{"none is nil, not an error", nil, nil, true, false},
		{"an error is returned, with no object", configMap("", "v"), apierrors.NewForbidden(configmaps, name, errors.New("no")), true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tt.stored != nil {
				_ = client.Tracker().Add(tt.stored)
			}
			if tt.fail != nil {
				failWith(client, "get", tt.fail)
			}
			got, err := Get(t.Context(), client.CoreV1().ConfigMaps(ns), name)
			if (err != nil) != tt.wantErr || (got == nil) != tt.wantNone {
				t.Fatalf("Get = %v, %v; want none %v, error %v", got, err, tt.wantNone, tt.wantErr)
			}
			if got != nil && got.Data["k"] != "v" {
				t.Errorf("read %v", got.Data)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	conflict := apierrors.NewConflict(configmaps, name, errors.New("the object has been modified"))
	tests := []struct {
		name    string
		stored  *corev1.ConfigMap // in the API server
		current *corev1.ConfigMap // as read
		want    string
		fail    error // of the write
		// then
		wantRequests []request
		wantErr      func(error) bool
		wantStored   string
	}{
		{name: "none is created with the field manager", want: "a",
			wantRequests: []request{{"create", manager}}, wantStored: "a"},
		{name: "a change is an update with the field manager", stored: configMap("1", "a"), current: configMap("1", "a"), want: "b",
			wantRequests: []request{{"update", manager}}, wantStored: "b"},
		{name: "unchanged content sends no write", stored: configMap("1", "a"), current: configMap("1", "a"), want: "a",
			wantRequests: nil, wantStored: "a"},
		{name: "a conflict is returned, not retried", stored: configMap("2", "x"), current: configMap("1", "a"), want: "b", fail: conflict,
			wantRequests: []request{{"update", manager}}, wantErr: apierrors.IsConflict, wantStored: "x"},
		{name: "one created meanwhile is returned as AlreadyExists", stored: configMap("1", "x"), want: "b",
			wantRequests: []request{{"create", manager}}, wantErr: apierrors.IsAlreadyExists, wantStored: "x"},
		{name: "one deleted meanwhile is returned as NotFound", current: configMap("1", "a"), want: "b",
			wantRequests: []request{{"update", manager}}, wantErr: apierrors.IsNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tt.stored != nil {
				_ = client.Tracker().Add(tt.stored)
			}
			if tt.fail != nil {
				failWith(client, "update", tt.fail)
			}
			var current *corev1.ConfigMap
			if tt.current != nil {
				current = tt.current.DeepCopy()
			}
			fresh := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"l": "v"}}}
			got, err := Write(t.Context(), client.CoreV1().ConfigMaps(ns), manager, current, fresh, func(cm *corev1.ConfigMap) bool {
				if cm.Data["k"] == tt.want {
					return false
				}
				metav1.SetMetaDataAnnotation(&cm.ObjectMeta, "a", "set")
				cm.Data = map[string]string{"k": tt.want}
				return true
			})
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !tt.wantErr(err) {
				t.Fatalf("Write: %v", err)
			}
			if err != nil && got != nil {
				t.Errorf("Write returned %v with its error", got)
			}
			if err == nil && got.Data["k"] != tt.want {
				t.Errorf("Write returned %v, want k=%s", got.Data, tt.want)
			}
			if tt.current != nil && (current.Data["k"] != tt.current.Data["k"] || current.Annotations != nil) {
				t.Errorf("Write changed the object as read: %v", current)
			}
			if r := requests(client); !slices.Equal(r, tt.wantRequests) {
				t.Errorf("requests %v, want %v", r, tt.wantRequests)
			}
			stored, _ := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("configmaps"), ns, name)
			if cm, _ := stored.(*corev1.ConfigMap); cm != nil && cm.Data["k"] != tt.wantStored {
				t.Errorf("the API server holds %v, want k=%s", cm.Data, tt.wantStored)
			}
			if tt.stored == nil && tt.current == nil {
				if cm := stored.(*corev1.ConfigMap); cm.Labels["l"] != "v" {
					t.Errorf("created %v, want the fresh object's labels", cm.ObjectMeta)
				}
			}
		})
	}
}

// TestAStoreThatRetriesWrapsGetAndWriteInRetryOnConflict shows the loop a store that retries
// runs: a conflict reads the object again and writes over the new version.
func TestAStoreThatRetriesWrapsGetAndWriteInRetryOnConflict(t *testing.T) {
	client := fake.NewClientset(configMap("1", "a"))
	conflicts := 1
	client.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(configmaps, name, errors.New("the object has been modified"))
	})
	cms := client.CoreV1().ConfigMaps(ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := Get(t.Context(), cms, name)
		if err != nil {
			return err
		}
		_, err = Write(t.Context(), cms, manager, current, configMap("", ""), func(cm *corev1.ConfigMap) bool {
			cm.Data["k"] = "b"
			return true
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []request{{"get", ""}, {"update", manager}, {"get", ""}, {"update", manager}}
	if r := requests(client); !slices.Equal(r, want) {
		t.Errorf("requests %v, want %v", r, want)
	}
}

func TestKnown(t *testing.T) {
	tests := []struct {
		name   string
		stored *corev1.ConfigMap
		// steps are Gets (put == "") and Puts, on one Known
		steps    []string
		failRead bool
		// then
		wantReads, wantWrites int
	}{
		{"a first Put reads what is there, and writes what differs", configMap("1", "a"), []string{"put b"}, false, 1, 1},
		{"a first Put of none writes", nil, []string{"put b"}, false, 1, 1},
		{"unchanged content sends no write (a converged restart)", configMap("1", "a"), []string{"put a"}, false, 1, 0},
		{"a Put of what was written sends nothing", nil, []string{"put a", "put a"}, false, 1, 1},
		{"a Put of what was read sends nothing", configMap("1", "a"), []string{"get", "put a", "put a"}, false, 1, 0},
		{"a Put after a Get of none writes without reading again", nil, []string{"get", "put a"}, false, 1, 1},
		{"a change is written without reading again", configMap("1", "a"), []string{"put a", "put b", "put a"}, false, 1, 2},
		{"what cannot be read is written", configMap("1", "a"), []string{"put a", "put a"}, true, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			if tt.stored != nil {
				_ = client.Tracker().Add(tt.stored)
			}
			if tt.failRead {
				failWith(client, "get", apierrors.NewServiceUnavailable("down"))
			}
			reads, writes := 0, 0
			k := NewKnown(func(ctx context.Context, name string) (string, error) {
				reads++
				cm, err := Get(ctx, client.CoreV1().ConfigMaps(ns), name)
				if err != nil || cm == nil {
					return "", err
				}
				return cm.Data["k"], nil
			}, func(a, b string) bool { return a == b })
			for _, step := range tt.steps {
				if step == "get" {
					_, _ = k.Get(t.Context(), name)
					continue
				}
				want := step[len("put "):]
				if err := k.Put(t.Context(), name, want, func(context.Context) error { writes++; return nil }); err != nil {
					t.Fatal(err)
				}
			}
			if reads != tt.wantReads || writes != tt.wantWrites {
				t.Errorf("%d reads, %d writes; want %d, %d", reads, writes, tt.wantReads, tt.wantWrites)
			}
		})
	}
}

func TestAFailedWriteIsReturnedAndNotRemembered(t *testing.T) {
	k := NewKnown(func(context.Context, string) (string, error) { return "", nil }, func(a, b string) bool { return a == b })
	failed := errors.New("refused")
	if err := k.Put(t.Context(), name, "a", func(context.Context) error { return failed }); !errors.Is(err, failed) {
		t.Fatalf("Put = %v, want the write's error", err)
	}
	writes := 0
	if err := k.Put(t.Context(), name, "a", func(context.Context) error { writes++; return nil }); err != nil || writes != 1 {
		t.Errorf("Put after a failed write: %v, %d writes; want it written", err, writes)
	}
}
