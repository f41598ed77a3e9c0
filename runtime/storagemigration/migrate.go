package storagemigration

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apply"
)

// DefaultPageSize is the objects listed per request when Migrator.PageSize is 0.
const DefaultPageSize = 500

// ErrCRDChanged is returned when the CRD's spec changed while its stored objects were migrated
// (its generation moved on, its storage version maybe with it): objects written meanwhile may be
// stored at a version this migration did not rewrite to, so status.storedVersions is left as it
// is, and the caller runs Migrate again.
var ErrCRDChanged = errors.New("the CRD changed while its stored objects were migrated")

// CRDResource is the resource of CustomResourceDefinitions, which Migrate reads and writes.
var CRDResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Migrator rewrites the stored objects of a CRD's resource at its storage version and then
// trims the CRD's status.storedVersions to that version.
type Migrator struct {
	// Dynamic reads and writes the CRD and the objects of its resource.
	Dynamic dynamic.Interface
	// FieldManager names the writer of every write.
	FieldManager string
	// PageSize is the objects listed per request (0: DefaultPageSize).
	PageSize int64
	// Server, when set, has the API server migrate the objects itself when the cluster serves
	// that (StorageVersionMigrations); nil, or a cluster that does not: the objects are rewritten
	// by Migrate.
	Server ServerMigrator
}

// Result is what one Migrate did.
type Result struct {
	// Rewritten is the objects Migrate rewrote; Skipped those someone else wrote or deleted
	// between the list and the rewrite (stored at the storage version by that write, or gone).
	Rewritten, Skipped int
	// Trimmed says the objects were migrated and status.storedVersions holds only the storage
	// version now.
	Trimmed bool
	// StoredVersions is the CRD's status.storedVersions as Migrate left it (nil after an error).
	StoredVersions []string
}

// target is what one migration is for: the CRD's resource at its storage version, as of the
// CRD's generation.
type target struct {
	crd        string
	resource   schema.GroupVersionResource
	generation int64
}

func (t target) storageVersion() string { return t.resource.Version }

// NeedsMigration reports whether the CRD's status.storedVersions holds a version other than its
// storage version: objects may be stored at it, and Migrate has work to do.
func NeedsMigration(crd *unstructured.Unstructured) bool {
	storage, ok := storageVersionOf(crd)
	if !ok {
		return false
	}
	for _, v := range storedVersionsOf(crd) {
		if v != storage {
			return true
		}
	}
	return false
}

// Migrate migrates the stored objects of the CRD named crdName to its storage version, when its
// status.storedVersions holds another version, and then trims status.storedVersions to the
// storage version. Everything is decided from the API server's objects: a CRD with nothing to
// migrate is not written to (a progress annotation left by an interrupted Migrate is removed), and
// a Migrate that was interrupted resumes after the last page it recorded. ErrCRDChanged: the CRD
// changed meanwhile and nothing was trimmed; run Migrate again.
func (m *Migrator) Migrate(ctx context.Context, crdName string) (Result, error) {
	crd, err := m.readCRD(ctx, crdName)
	if err != nil {
		return Result{}, err
	}
	t, err := targetOf(crd)
	if err != nil {
		return Result{}, err
	}
	if !NeedsMigration(crd) {
		return Result{StoredVersions: storedVersionsOf(crd)}, m.forgetProgress(ctx, crd)
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("crd", klog.KRef("", crdName), "storageVersion", t.storageVersion()))
	res, err := m.migrateObjects(ctx, crd, t)
	if err != nil {
		return res, err
	}
	crd, err = m.trim(ctx, t)
	if err != nil {
		return res, err
	}
	res.Trimmed, res.StoredVersions = true, storedVersionsOf(crd)
	klog.FromContext(ctx).Info("Migrated the stored objects of a CRD and trimmed its stored versions", "rewritten", res.Rewritten, "skipped", res.Skipped)
	return res, m.forgetProgress(ctx, crd)
}

// migrateObjects has the API server migrate the objects, when it serves that, or rewrites them.
func (m *Migrator) migrateObjects(ctx context.Context, crd *unstructured.Unstructured, t target) (Result, error) {
	if m.Server != nil {
		served, err := m.Server.Migrate(ctx, t.crd, t.resource.GroupResource(), t.generation)
		if err != nil {
			return Result{}, fmt.Errorf("migrate the stored objects of CRD %q: %w", t.crd, err)
		}
		if served {
			return Result{}, nil
		}
	}
	return m.rewriteAll(ctx, t, resumeAfter(ctx, crd, t))
}

// trim sets the CRD's status.storedVersions to the storage version, over the CRD as read just
// before (a concurrent write to it is a Conflict, and the read is made again), as long as its
// spec is the one migrated for. It returns the CRD as written.
func (m *Migrator) trim(ctx context.Context, t target) (*unstructured.Unstructured, error) {
	var crd *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if crd, err = m.getCRD(ctx, t.crd); err != nil {
			return err
		}
		now, err := targetOf(crd)
		if err != nil {
			return err
		}
		if now != t {
			return fmt.Errorf("%w (generation %d, storage version %q; migrated for %d, %q)",
				ErrCRDChanged, now.generation, now.storageVersion(), t.generation, t.storageVersion())
		}
		if slices.Equal(storedVersionsOf(crd), []string{t.storageVersion()}) {
			return nil
		}
		if err := unstructured.SetNestedStringSlice(crd.Object, []string{t.storageVersion()}, "status", "storedVersions"); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
		defer cancel()
		crd, err = m.Dynamic.Resource(CRDResource).UpdateStatus(ctx, crd, metav1.UpdateOptions{FieldManager: m.FieldManager})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("trim the stored versions of CRD %q: %w", t.crd, err)
	}
	return crd, nil
}

// readCRD reads the CRD named name.
func (m *Migrator) readCRD(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	crd, err := m.getCRD(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("read CRD %q: %w", name, err)
	}
	return crd, nil
}

func (m *Migrator) getCRD(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	ctx, cancel := context.WithTimeout(ctx, apply.RequestTimeout)
	defer cancel()
	return m.Dynamic.Resource(CRDResource).Get(ctx, name, metav1.GetOptions{})
}

// targetOf is the CRD's resource at its storage version, as of its generation.
func targetOf(crd *unstructured.Unstructured) (target, error) {
	storage, ok := storageVersionOf(crd)
	if !ok {
		return target{}, fmt.Errorf("CRD %q has no storage version", crd.GetName())
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	if group == "" || plural == "" {
		return target{}, fmt.Errorf("CRD %q names no group or plural", crd.GetName())
	}
	return target{
		crd:        crd.GetName(),
		resource:   schema.GroupVersionResource{Group: group, Version: storage, Resource: plural},
		generation: crd.GetGeneration(),
	}, nil
}

// storageVersionOf is the name of the version of the CRD marked storage.
func storageVersionOf(crd *unstructured.Unstructured) (string, bool) {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		version, _ := v.(map[string]any)
		if storage, _ := version["storage"].(bool); storage {
			name, _ := version["name"].(string)
			return name, name != ""
		}
	}
	return "", false
}

func storedVersionsOf(crd *unstructured.Unstructured) []string {
	stored, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	return stored
}
