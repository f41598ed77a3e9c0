package operator

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/storagemigration"
)

// migrations rewrite the stored parents of the CRDs the runtime installs at their storage version
// when it has changed (package storagemigration), one at a time per CRD, in the background: the
// policy runs meanwhile, since the API server converts parents stored at any version. Whether a
// CRD needs one is read from the CRD (status.storedVersions) each time its policy loads, so a
// migration cut short by a restart resumes (from the progress the CRD records).
type migrations struct {
	mu      sync.Mutex
	running map[string]bool
}

// migrationRetry bounds the wait between attempts of a migration that failed.
const (
	migrationRetryFirst = 5 * time.Second
	migrationRetryMax   = 5 * time.Minute
)

// svmDeadline is how long the API server's own StorageVersionMigration, where the cluster serves
// it, is waited for before the runtime rewrites the parents itself.
const svmDeadline = 10 * time.Minute

// start migrates the CRD's stored parents as client (the policy's identity) unless a migration of
// it runs already: by the API server's StorageVersionMigration when discovery says the cluster
// serves it, else by the runtime's own rewrites.
func (m *migrations) start(ctx context.Context, crd string, client dynamic.Interface, discovery storagemigration.ResourceDiscovery) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running == nil {
		m.running = map[string]bool{}
	}
	if m.running[crd] {
		return
	}
	m.running[crd] = true
	go func() {
		defer func() {
			m.mu.Lock()
			delete(m.running, crd)
			m.mu.Unlock()
		}()
		migrate(ctx, crd, client, discovery)
	}()
}

// migrate runs a CRD's migration until it is done or ctx ends, retrying after failures.
func migrate(ctx context.Context, crd string, client dynamic.Interface, discovery storagemigration.ResourceDiscovery) {
	logger := klog.FromContext(ctx).WithValues("crd", crd)
	migrator := &storagemigration.Migrator{Dynamic: client, FieldManager: apply.FieldManager}
	if discovery != nil {
		migrator.Server = storagemigration.StorageVersionMigrations{Dynamic: client, Discovery: discovery, FieldManager: apply.FieldManager, Deadline: svmDeadline}
	}
	backoff := wait.Backoff{Duration: migrationRetryFirst, Factor: 2, Steps: 1 << 30, Cap: migrationRetryMax}
	for ctx.Err() == nil {
		// a write the API server takes before every one of its instances has the new storage
		// version may still store the old one: let the CRD change settle first
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff.Step()):
		}
		res, err := migrator.Migrate(ctx, crd)
		if err == nil {
			logger.Info("Migrated the stored parents to the storage version", "rewritten", res.Rewritten, "skipped", res.Skipped, "storedVersions", res.StoredVersions)
			return
		}
		logger.Error(err, "Migrating the stored parents failed; retrying")
	}
}
