package storagemigration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// stubServer is a ServerMigrator that answers served and err, and records its calls.
type stubServer struct {
	served bool
	err    error
	calls  []string
}

func (s *stubServer) Migrate(_ context.Context, crdName string, resource schema.GroupResource, generation int64) (bool, error) {
	s.calls = append(s.calls, fmt.Sprintf("%s %s %d", crdName, resource, generation))
	return s.served, s.err
}

// failUpdate makes the update of the widget with the key fail with err.
func failUpdate(key string, err error) func(*fake.FakeDynamicClient) {
	return func(c *fake.FakeDynamicClient) {
		c.PrependReactor("update", "widgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if keyOf(a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured)) == key {
				return true, nil, err
			}
			return false, nil, nil
		})
	}
}

// changeCRDAt changes the CRD's storage version to storage, at generation, when the widget with
// the key is updated.
func changeCRDAt(key, storage string, generation int64) func(*fake.FakeDynamicClient) {
	return func(c *fake.FakeDynamicClient) {
		c.PrependReactor("update", "widgets", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if keyOf(a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured)) != key {
				return false, nil, nil
			}
			obj, err := c.Tracker().Get(CRDResource, "", crdName)
			if err != nil {
				return true, nil, err
			}
			u := obj.(*unstructured.Unstructured)
			changed := crd(storage, generation, storedVersionsOf(u), u.GetAnnotations())
			return false, nil, c.Tracker().Update(CRDResource, changed, "")
		})
	}
}

// conflictOnce refuses the first update of the CRD's status with a Conflict.
func conflictOnce(c *fake.FakeDynamicClient) {
	refused := false
	c.PrependReactor("update", "customresourcedefinitions", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || refused {
			return false, nil, nil
		}
		refused = true
		return true, nil, apierrors.NewConflict(CRDResource.GroupResource(), crdName, errors.New("the object has been modified"))
	})
}

// progressWrites is what each patch of the CRD set its annotation to: the "after" it recorded,
// or "removed".
func progressWrites(t *testing.T, c *fake.FakeDynamicClient) []string {
	t.Helper()
	var out []string
	for _, a := range c.Actions() {
		p, ok := a.(k8stesting.PatchAction)
		if !ok || a.GetResource() != CRDResource {
			continue
		}
		var patch struct {
			Metadata struct {
				Annotations map[string]*string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(p.GetPatch(), &patch); err != nil {
			t.Fatal(err)
		}
		value := patch.Metadata.Annotations[Annotation]
		if value == nil {
			out = append(out, "removed")
			continue
		}
		var recorded progress
		if err := json.Unmarshal([]byte(*value), &recorded); err != nil {
			t.Fatal(err)
		}
		out = append(out, recorded.After)
	}
	return out
}

func progressAnnotation(storage string, generation int64, after string) map[string]string {
	b, _ := json.Marshal(progress{StorageVersion: storage, Generation: generation, After: after})
	return map[string]string{Annotation: string(b)}
}

func TestMigrate(t *testing.T) {
	both := []string{"v1alpha1", "v1"}
	tests := []struct {
		name   string
		crd    *unstructured.Unstructured
		react  []func(*fake.FakeDynamicClient)
		expire []string
		server *stubServer

		want           Result
		wantErr        string
		wantErrIs      error
		wantUpdated    []string // the widgets updated, in order
		wantProgress   []string // the progress annotation's writes, in order
		wantStatus     int      // the updates of the CRD's status
		wantStored     []string // the CRD's status.storedVersions afterwards
		wantAnnotation bool     // whether the CRD keeps a progress annotation
		wantLists      int      // the lists of widgets (0: not checked)
	}{
		{
			name:       "storedVersions is the storage version alone: nothing is written",
			crd:        crd("v1", 2, []string{"v1"}, nil),
			want:       Result{StoredVersions: []string{"v1"}},
			wantStored: []string{"v1"},
		},
		{
			name:         "nothing to migrate but the progress of a Migrate interrupted after its trim: the annotation is removed",
			crd:          crd("v1", 2, []string{"v1"}, progressAnnotation("v1", 2, "b/w3")),
			want:         Result{StoredVersions: []string{"v1"}},
			wantProgress: []string{"removed"},
			wantStored:   []string{"v1"},
		},
		{
			name:         "three pages: every object rewritten, progress recorded after each page, storedVersions trimmed and the annotation removed",
			crd:          crd("v1", 2, both, nil),
			want:         Result{Rewritten: 7, Trimmed: true, StoredVersions: []string{"v1"}},
			wantUpdated:  widgetKeys,
			wantProgress: []string{"a/w2", "b/w3", "removed"},
			wantStatus:   1,
			wantStored:   []string{"v1"},
			wantLists:    3,
		},
		{
			name: "objects written or deleted since listed: skipped, and storedVersions trimmed",
			crd:  crd("v1", 2, both, nil),
			react: []func(*fake.FakeDynamicClient){
				failUpdate("a/w2", apierrors.NewConflict(widgets.GroupResource(), "w2", errors.New("the object has been modified"))),
				failUpdate("b/w1", apierrors.NewNotFound(widgets.GroupResource(), "w1")),
			},
			want:         Result{Rewritten: 5, Skipped: 2, Trimmed: true, StoredVersions: []string{"v1"}},
			wantUpdated:  widgetKeys,
			wantProgress: []string{"a/w2", "b/w3", "removed"},
			wantStatus:   1,
			wantStored:   []string{"v1"},
		},
		{
			name:         "the progress of an interrupted Migrate: the objects up to it are not rewritten again",
			crd:          crd("v1", 2, both, progressAnnotation("v1", 2, "a/w2")),
			want:         Result{Rewritten: 4, Trimmed: true, StoredVersions: []string{"v1"}},
			wantUpdated:  []string{"b/w1", "b/w2", "b/w3", "c/w1"},
			wantProgress: []string{"b/w3", "removed"},
			wantStatus:   1,
			wantStored:   []string{"v1"},
		},
		{
			name:         "the progress of a migration to another storage version: every object rewritten",
			crd:          crd("v1", 2, both, progressAnnotation("v1alpha1", 2, "b/w3")),
			want:         Result{Rewritten: 7, Trimmed: true, StoredVersions: []string{"v1"}},
			wantUpdated:  widgetKeys,
			wantProgress: []string{"a/w2", "b/w3", "removed"},
			wantStatus:   1,
			wantStored:   []string{"v1"},
		},
		{
			name:         "the progress of a migration for another generation of the CRD: every object rewritten",
			crd:          crd("v1", 2, both, progressAnnotation("v1", 1, "b/w3")),
			want:         Result{Rewritten: 7, Trimmed: true, StoredVersions: []string{"v1"}},
			wantUpdated:  widgetKeys,
			wantProgress: []string{"a/w2", "b/w3", "removed"},
			wantStatus:   1,
			wantStored:   []string{"v1"},
		},
		{
			name:         "an unreadable progress: every object rewritten",
			crd:          crd("v1", 2, both, map[string]string{Annotation: "a/w2"}),
			want:         Result{Rewritten: 7, Trimmed: true, StoredVersions: []string{"v1"}},
			wantUpdated:  widgetKeys,
			wantProgress: []string{"a/w2", "b/w3", "removed"},
			wantStatus:   1,
			wantStored:   []string{"v1"},
		},
		{
			name:         "a continue token that expired: listed again from the start, no object rewritten twice",
			crd:          crd("v1", 2, both, nil),
			expire:       []string{"a/w2"},
			want:         Result{Rewritten: 7, Trimmed: true, StoredVersions: []string{"v1"}},
			wantUpdated:  widgetKeys,
			wantProgress: []string{"a/w2", "b/w3", "removed"},
			wantStatus:   1,
			wantStored:   []string{"v1"},
			wantLists:    5,
		},
		{
			name:           "the storage version changed mid-way: nothing trimmed, the progress kept",
			crd:            crd("v1", 2, both, nil),
			react:          []func(*fake.FakeDynamicClient){changeCRDAt("b/w1", "v1alpha1", 3)},
			want:           Result{Rewritten: 7},
			wantErrIs:      ErrCRDChanged,
			wantUpdated:    widgetKeys,
			wantProgress:   []string{"a/w2", "b/w3"},
			wantStored:     both,
			wantAnnotation: true,
		},
		{
			name:           "an update refused otherwise: an error naming the object, nothing trimmed",
			crd:            crd("v1", 2, both, progressAnnotation("v1", 2, "a-b/w1")),
			react:          []func(*fake.FakeDynamicClient){failUpdate("a/w2", apierrors.NewForbidden(widgets.GroupResource(), "w2", errors.New("no")))},
			want:           Result{Rewritten: 1},
			wantErr:        `rewrite widgets.example.com "a/w2" of CRD "widgets.example.com": `,
			wantUpdated:    []string{"a/w1", "a/w2"},
			wantStored:     both,
			wantAnnotation: true,
		},
		{
			name:         "a write to the CRD before the trim: read again, then trimmed",
			crd:          crd("v1", 2, both, nil),
			react:        []func(*fake.FakeDynamicClient){conflictOnce},
			want:         Result{Rewritten: 7, Trimmed: true, StoredVersions: []string{"v1"}},
			wantUpdated:  widgetKeys,
			wantProgress: []string{"a/w2", "b/w3", "removed"},
			wantStatus:   2,
			wantStored:   []string{"v1"},
		},
		{
			name:         "a cluster that migrates itself: no object rewritten here, storedVersions trimmed",
			crd:          crd("v1", 2, both, progressAnnotation("v1", 2, "a/w2")),
			server:       &stubServer{served: true},
			want:         Result{Trimmed: true, StoredVersions: []string{"v1"}},
			wantProgress: []string{"removed"},
			wantStatus:   1,
			wantStored:   []string{"v1"},
		},
		{
			name:         "a cluster that does not serve its own migration: the objects rewritten here",
			crd:          crd("v1", 2, both, nil),
			server:       &stubServer{},
			want:         Result{Rewritten: 7, Trimmed: true, StoredVersions: []string{"v1"}},
			wantUpdated:  widgetKeys,
			wantProgress: []string{"a/w2", "b/w3", "removed"},
			wantStatus:   1,
			wantStored:   []string{"v1"},
		},
		{
			name:       "the cluster's own migration failed: nothing trimmed",
			crd:        crd("v1", 2, both, nil),
			server:     &stubServer{served: true, err: errors.New(`storage version migration "widgets.example.com" failed`)},
			wantErr:    `migrate the stored objects of CRD "widgets.example.com": storage version migration`,
			wantStored: both,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []runtime.Object{tt.crd}
			for _, k := range widgetKeys {
				objs = append(objs, widget(k))
			}
			client := newFake(objs...)
			for _, react := range tt.react {
				react(client)
			}
			expire := map[string]bool{}
			for _, token := range tt.expire {
				expire[token] = true
			}
			p := &paged{FakeDynamicClient: client, expire: expire}
			m := &Migrator{Dynamic: p, FieldManager: "metacel", PageSize: 3}
			if tt.server != nil {
				m.Server = tt.server
			}

			got, err := m.Migrate(context.Background(), crdName)

			switch {
			case tt.wantErrIs != nil && !errors.Is(err, tt.wantErrIs):
				t.Fatalf("error %v, want %v", err, tt.wantErrIs)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			case tt.wantErrIs == nil && tt.wantErr == "" && err != nil:
				t.Fatal(err)
			}
			if got.Rewritten != tt.want.Rewritten || got.Skipped != tt.want.Skipped || got.Trimmed != tt.want.Trimmed || !slices.Equal(got.StoredVersions, tt.want.StoredVersions) {
				t.Errorf("result %+v, want %+v", got, tt.want)
			}
			if updated := writes(client, "update", widgets, ""); !slices.Equal(updated, tt.wantUpdated) {
				t.Errorf("updated %q, want %q", updated, tt.wantUpdated)
			}
			if recorded := progressWrites(t, client); !slices.Equal(recorded, tt.wantProgress) {
				t.Errorf("progress written %q, want %q", recorded, tt.wantProgress)
			}
			if status := len(writes(client, "update", CRDResource, "status")); status != tt.wantStatus {
				t.Errorf("%d updates of the CRD's status, want %d", status, tt.wantStatus)
			}
			if want := len(tt.wantUpdated) + len(tt.wantProgress) + tt.wantStatus; allWrites(client) != want {
				t.Errorf("%d writes, want %d: %v", allWrites(client), want, client.Actions())
			}
			if tt.wantLists != 0 && len(p.lists) != tt.wantLists {
				t.Errorf("%d lists, want %d: %+v", len(p.lists), tt.wantLists, p.lists)
			}
			for _, opts := range p.lists {
				if opts.Limit != 3 {
					t.Errorf("a list with limit %d, want 3", opts.Limit)
				}
			}
			after := readCRD(t, client)
			if stored := storedVersionsOf(after); !slices.Equal(stored, tt.wantStored) {
				t.Errorf("storedVersions %q, want %q", stored, tt.wantStored)
			}
			if _, ok := after.GetAnnotations()[Annotation]; ok != tt.wantAnnotation {
				t.Errorf("progress annotation %v, want %v", ok, tt.wantAnnotation)
			}
			if tt.server != nil && !slices.Equal(tt.server.calls, []string{"widgets.example.com widgets.example.com 2"}) {
				t.Errorf("server migrations %q, want one for generation 2", tt.server.calls)
			}
		})
	}
}

func TestMigrateWritesWithTheFieldManager(t *testing.T) {
	client := newFake(crd("v1", 2, []string{"v1alpha1", "v1"}, nil), widget("a/w1"))
	m := &Migrator{Dynamic: &paged{FakeDynamicClient: client}, FieldManager: "metacel-migrate"}
	if _, err := m.Migrate(context.Background(), crdName); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		var manager string
		switch a := a.(type) {
		case k8stesting.UpdateActionImpl:
			manager = a.UpdateOptions.FieldManager
		case k8stesting.PatchActionImpl:
			manager = a.PatchOptions.FieldManager
		default:
			continue
		}
		if manager != "metacel-migrate" {
			t.Errorf("%s %s with field manager %q, want %q", a.GetVerb(), a.GetResource().Resource, manager, "metacel-migrate")
		}
	}
}

func TestMigrateAnUnknownCRD(t *testing.T) {
	m := &Migrator{Dynamic: &paged{FakeDynamicClient: newFake()}}
	_, err := m.Migrate(context.Background(), crdName)
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `read CRD "widgets.example.com"`) {
		t.Fatalf("error %v, want a NotFound naming the CRD", err)
	}
}

func TestNeedsMigration(t *testing.T) {
	noStorage := crd("v2", 1, []string{"v1"}, nil)
	tests := []struct {
		name string
		crd  *unstructured.Unstructured
		want bool
	}{
		{name: "stored at the storage version alone", crd: crd("v1", 1, []string{"v1"}, nil), want: false},
		{name: "stored at an old version too", crd: crd("v1", 1, []string{"v1alpha1", "v1"}, nil), want: true},
		{name: "stored at the old version alone", crd: crd("v1", 1, []string{"v1alpha1"}, nil), want: true},
		{name: "no storedVersions yet", crd: crd("v1", 1, nil, nil), want: false},
		{name: "no version is storage", crd: noStorage, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedsMigration(tt.crd); got != tt.want {
				t.Errorf("NeedsMigration = %v, want %v", got, tt.want)
			}
		})
	}
}
