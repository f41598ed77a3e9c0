package storagemigration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"metacel.dev/metacel/runtime/apply"
)

// ServerMigrator has the API server migrate the stored objects of a resource itself.
type ServerMigrator interface {
	// Migrate has the API server rewrite every stored object of the resource of the CRD named
	// crdName at its storage version, as of the CRD's generation, and returns once it has; served
	// is false, and nothing is done, when the cluster does not serve such migrations.
	Migrate(ctx context.Context, crdName string, resource schema.GroupResource, generation int64) (served bool, err error)
}

// SVMResource is the API server's StorageVersionMigrations.
var SVMResource = schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1beta1", Resource: "storageversionmigrations"}

// ResourceDiscovery says which resources a group version serves: client-go's discovery client
// is one.
type ResourceDiscovery interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// StorageVersionMigrations is the ServerMigrator of a cluster that serves StorageVersionMigrations
// (storagemigration.k8s.io/v1beta1, behind the API server's feature gate StorageVersionMigrator):
// one per CRD, named as the CRD, created with Annotation recording the CRD's generation it is for,
// and waited for until its condition Succeeded is True. One made for another generation of the
// CRD, or Failed, is deleted and made again.
type StorageVersionMigrations struct {
	Dynamic      dynamic.Interface
	Discovery    ResourceDiscovery
	FieldManager string
	// Interval is how often the migration is read while waited for (0: 2s).
	Interval time.Duration
	// Deadline, when set, is how long the migration is waited for before Migrate gives up on it
	// and reports it not served, so that the caller rewrites the objects itself: a cluster may
	// serve the API with no controller running the migrations (the kube-controller-manager's
	// storage-version-migrator-controller is off by default).
	Deadline time.Duration
}

// Migrate implements ServerMigrator.
func (s StorageVersionMigrations) Migrate(ctx context.Context, crdName string, resource schema.GroupResource, generation int64) (bool, error) {
	if served, err := s.served(); !served {
		return false, err
	}
	svm, err := s.ensure(ctx, crdName, resource, generation)
	if err != nil {
		return true, err
	}
	klog.FromContext(ctx).V(2).Info("Waiting for the API server's storage version migration", "storageVersionMigration", klog.KObj(svm))
	if s.Deadline <= 0 {
		return true, s.wait(ctx, crdName)
	}
	waitCtx, cancel := context.WithTimeout(ctx, s.Deadline)
	defer cancel()
	err = s.wait(waitCtx, crdName)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		klog.FromContext(ctx).Info("The API server's storage version migration did not finish in time (does a controller run it?): rewriting the objects instead",
			"storageVersionMigration", klog.KObj(svm), "deadline", s.Deadline)
		return false, nil
	}
	return true, err
}

// served reports whether the cluster serves StorageVersionMigrations.
func (s StorageVersionMigrations) served() (bool, error) {
	list, err := s.Discovery.ServerResourcesForGroupVersion(SVMResource.GroupVersion().String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discover %s: %w", SVMResource.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == SVMResource.Resource {
			return true, nil
		}
	}
	return false, nil
}

// ensure returns the migration of the CRD for its generation, made if there is none, or the one
// there is for another generation or failed.
func (s StorageVersionMigrations) ensure(ctx context.Context, crdName string, resource schema.GroupResource, generation int64) (*unstructured.Unstructured, error) {
	client := s.Dynamic.Resource(SVMResource)
	reqCtx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
	defer cancel()
	svm, err := client.Get(reqCtx, crdName, metav1.GetOptions{})
	switch {
	case err == nil && svmGeneration(svm) == generation && !conditionTrue(svm, svmv1beta1.MigrationFailed):
		return svm, nil
	case err == nil:
		klog.FromContext(ctx).Info("Replacing the API server's storage version migration", "storageVersionMigration", klog.KObj(svm), "recordedGeneration", svmGeneration(svm), "generation", generation)
		err = client.Delete(reqCtx, crdName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(svm.GetUID())}})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("delete storage version migration %q: %w", crdName, err)
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("read storage version migration %q: %w", crdName, err)
	}
	svm, err = client.Create(reqCtx, newSVM(crdName, resource, generation), metav1.CreateOptions{FieldManager: s.FieldManager})
	if err != nil {
		return nil, fmt.Errorf("create storage version migration %q: %w", crdName, err)
	}
	return svm, nil
}

// wait waits until the migration named name succeeded; one that failed or is gone is an error.
func (s StorageVersionMigrations) wait(ctx context.Context, name string) error {
	interval := s.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	return wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
		defer cancel()
		svm, err := s.Dynamic.Resource(SVMResource).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil:
			return false, fmt.Errorf("read storage version migration %q: %w", name, err)
		case conditionTrue(svm, svmv1beta1.MigrationFailed):
			return false, fmt.Errorf("storage version migration %q failed: %s", name, condition(svm, svmv1beta1.MigrationFailed).Message)
		}
		return conditionTrue(svm, svmv1beta1.MigrationSucceeded), nil
	})
}

func newSVM(name string, resource schema.GroupResource, generation int64) *unstructured.Unstructured {
	recorded, _ := json.Marshal(progress{Generation: generation})
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": SVMResource.GroupVersion().String(),
		"kind":       "StorageVersionMigration",
		"metadata":   map[string]any{"name": name, "annotations": map[string]any{Annotation: string(recorded)}},
		"spec":       map[string]any{"resource": map[string]any{"group": resource.Group, "resource": resource.Resource}},
	}}
}

// svmGeneration is the CRD generation a migration was made for (0: none recorded).
func svmGeneration(svm *unstructured.Unstructured) int64 {
	var p progress
	if err := json.Unmarshal([]byte(svm.GetAnnotations()[Annotation]), &p); err != nil {
		return 0
	}
	return p.Generation
}

// condition is the migration's condition of the type, nil when it has none or cannot be read.
func condition(svm *unstructured.Unstructured, conditionType svmv1beta1.MigrationConditionType) *metav1.Condition {
	var typed svmv1beta1.StorageVersionMigration
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(svm.Object, &typed); err != nil {
		return nil
	}
	return meta.FindStatusCondition(typed.Status.Conditions, string(conditionType))
}

func conditionTrue(svm *unstructured.Unstructured, conditionType svmv1beta1.MigrationConditionType) bool {
	c := condition(svm, conditionType)
	return c != nil && c.Status == metav1.ConditionTrue
}
