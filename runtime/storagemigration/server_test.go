package storagemigration

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// discovery serves, by group version, the resources listed; err answers every request.
type discovery struct {
	served map[string][]string
	err    error
}

func (d discovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	if d.err != nil {
		return nil, d.err
	}
	names, ok := d.served[gv]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
	}
	list := &metav1.APIResourceList{GroupVersion: gv}
	for _, n := range names {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: n})
	}
	return list, nil
}

var servesSVM = discovery{served: map[string][]string{"storagemigration.k8s.io/v1beta1": {"storageversionmigrations", "storageversionmigrations/status"}}}

// svm is a StorageVersionMigration of widgets made for the CRD generation, with a condition of
// the type (none: "").
func svm(generation int64, condition string) *unstructured.Unstructured {
	u := newSVM(crdName, widgets.GroupResource(), generation)
	u.SetUID("uid-1")
	setCondition(u, condition)
	return u
}

func setCondition(u *unstructured.Unstructured, condition string) {
	if condition == "" {
		return
	}
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{
		"type": condition, "status": "True", "reason": condition, "message": "it is " + condition,
		"lastTransitionTime": "2026-01-01T00:00:00Z",
	}}, "status", "conditions")
}

// concludeCreated gives each StorageVersionMigration created the condition.
func concludeCreated(condition string) func(*fake.FakeDynamicClient) {
	return func(c *fake.FakeDynamicClient) {
		c.PrependReactor("create", "storageversionmigrations", func(a k8stesting.Action) (bool, runtime.Object, error) {
			setCondition(a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured), condition)
			return false, nil, nil
		})
	}
}

// succeedAtThirdRead has the StorageVersionMigration succeed when it is read the third time:
// the first read finds none, the second finds it running.
func succeedAtThirdRead(c *fake.FakeDynamicClient) {
	reads := 0
	c.PrependReactor("get", "storageversionmigrations", func(k8stesting.Action) (bool, runtime.Object, error) {
		if reads++; reads != 3 {
			return false, nil, nil
		}
		obj, err := c.Tracker().Get(SVMResource, "", crdName)
		if err != nil {
			return true, nil, err
		}
		u := obj.(*unstructured.Unstructured)
		setCondition(u, "Succeeded")
		return false, nil, c.Tracker().Update(SVMResource, u, "")
	})
}

func TestStorageVersionMigrations(t *testing.T) {
	tests := []struct {
		name      string
		discovery discovery
		existing  *unstructured.Unstructured
		react     func(*fake.FakeDynamicClient)

		wantServed  bool
		wantErr     string
		wantDeleted bool
		wantCreated bool
	}{
		{
			name:      "a cluster that does not serve StorageVersionMigrations: nothing done",
			discovery: discovery{},
		},
		{
			name:      "discovery that fails: an error",
			discovery: discovery{err: errors.New("connection refused")},
			wantErr:   "discover storagemigration.k8s.io/v1beta1: connection refused",
		},
		{
			name:        "none yet: one made for the CRD's generation, waited for until it succeeded",
			discovery:   servesSVM,
			react:       succeedAtThirdRead,
			wantServed:  true,
			wantCreated: true,
		},
		{
			name:       "one for this generation that succeeded: nothing made",
			discovery:  servesSVM,
			existing:   svm(2, "Succeeded"),
			wantServed: true,
		},
		{
			name:        "one for another generation: replaced",
			discovery:   servesSVM,
			existing:    svm(1, "Succeeded"),
			react:       concludeCreated("Succeeded"),
			wantServed:  true,
			wantDeleted: true,
			wantCreated: true,
		},
		{
			name:        "one for this generation that failed: replaced",
			discovery:   servesSVM,
			existing:    svm(2, "Failed"),
			react:       concludeCreated("Succeeded"),
			wantServed:  true,
			wantDeleted: true,
			wantCreated: true,
		},
		{
			name:        "one that fails: an error with its message",
			discovery:   servesSVM,
			react:       concludeCreated("Failed"),
			wantServed:  true,
			wantCreated: true,
			wantErr:     `storage version migration "widgets.example.com" failed: it is Failed`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			if tt.existing != nil {
				objs = append(objs, tt.existing)
			}
			client := newFake(objs...)
			if tt.react != nil {
				tt.react(client)
			}
			s := StorageVersionMigrations{Dynamic: client, Discovery: tt.discovery, FieldManager: "metacel", Interval: time.Millisecond}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			served, err := s.Migrate(ctx, crdName, widgets.GroupResource(), 2)

			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if served != tt.wantServed {
				t.Errorf("served %v, want %v", served, tt.wantServed)
			}
			if deleted := writes(client, "delete", SVMResource, ""); (len(deleted) == 1) != tt.wantDeleted || len(deleted) > 1 {
				t.Errorf("deleted %q, want deleted %v", deleted, tt.wantDeleted)
			}
			created := writes(client, "create", SVMResource, "")
			if (len(created) == 1) != tt.wantCreated || len(created) > 1 {
				t.Fatalf("created %q, want created %v", created, tt.wantCreated)
			}
			if !tt.wantCreated {
				return
			}
			got, err := client.Resource(SVMResource).Get(ctx, crdName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			resource, _, _ := unstructured.NestedStringMap(got.Object, "spec", "resource")
			if resource["group"] != "example.com" || resource["resource"] != "widgets" || svmGeneration(got) != 2 {
				t.Errorf("made %v, want one of widgets.example.com for generation 2", got.Object)
			}
		})
	}
}

func TestStorageVersionMigrationsWaitUntilTheContextEnds(t *testing.T) {
	client := newFake()
	s := StorageVersionMigrations{Dynamic: client, Discovery: servesSVM, Interval: time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	served, err := s.Migrate(ctx, crdName, widgets.GroupResource(), 2)
	if !served || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("served %v, error %v; want served and the context's deadline", served, err)
	}
	if created := writes(client, "create", SVMResource, ""); !slices.Equal(created, []string{crdName}) {
		t.Errorf("created %q, want %q", created, crdName)
	}
}

func TestAMigrationNotDoneByItsDeadlineIsLeftToTheCaller(t *testing.T) {
	client := newFake()
	s := StorageVersionMigrations{Dynamic: client, Discovery: servesSVM, Interval: time.Millisecond, Deadline: 20 * time.Millisecond}
	served, err := s.Migrate(context.Background(), crdName, widgets.GroupResource(), 2)
	if served || err != nil {
		t.Fatalf("served %v, error %v; want not served, so that the caller rewrites the objects", served, err)
	}
}
