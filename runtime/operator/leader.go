package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// LeaderElection configures the Lease that replicas compete for.
type LeaderElection struct {
	// ID names the Lease; Namespace holds it.
	ID, Namespace string
	// Identity of this replica; empty: hostname and a random suffix.
	Identity                                  string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// DefaultLeaderElection has Kubernetes' usual timings: a standby takes over at most 15 s after
// the leader stops renewing, at once when it releases the Lease on shutdown. The leader stops
// writing 10 s (RenewDeadline) after its last renewal, whether or not it knows (fence.go).
func DefaultLeaderElection(namespace string) LeaderElection {
	return LeaderElection{ID: "metacel", Namespace: namespace, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// errLostLease ends a replica that lost its Lease while leading: its caches and queues may be
// stale, so it stops rather than risk writing next to the new leader (a Deployment restarts it
// as a standby).
var errLostLease = errors.New("lost the leader election Lease")

// runElected runs lead while this replica holds the Lease; it returns when ctx is done (having
// released the Lease) or when the Lease is lost. The Lease is read and written with a client of
// cfg, which must not go through fence: fence learns from it when the Lease is acquired, renewed
// or lost, and the leader's other clients write through it (fence.go).
func runElected(ctx context.Context, cfg *rest.Config, fence *writeFence, le LeaderElection, lead func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	identity := le.Identity
	if identity == "" {
		host, _ := os.Hostname()
		identity = host + "_" + string(uuid.NewUUID())
	}
	lock, err := electionLock(cfg, fence, le, identity)
	if err != nil {
		return err
	}
	// The elector runs on its own context, stopped only once the leader's work has returned, so
	// that the Lease is released after the last write, not before; and a leader whose work ends
	// early (a failed source) gives up the Lease instead of holding it idle.
	electorCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	led := make(chan error, 1)
	var leading atomic.Bool
	go func() {
		<-ctx.Done()
		if !leading.Load() {
			stopElector() // a standby stops at once
		}
	}()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            le.ID,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				leading.Store(true)
				logger.Info("Leading", "lease", le.Namespace+"/"+le.ID, "identity", identity)
				leadCtx, cancel := context.WithCancel(lctx)
				defer context.AfterFunc(ctx, cancel)()
				led <- lead(leadCtx)
				cancel()
				stopElector()
			},
			OnStoppedLeading: func() { logger.Info("Not leading", "identity", identity) },
			OnNewLeader: func(leader string) {
				if leader != identity {
					logger.Info("Standing by", "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	elector.Run(electorCtx) // returns when stopped or when leadership is lost
	if !leading.Load() {
		return nil // stopped while standing by
	}
	if err := <-led; err != nil || ctx.Err() != nil { // wait until the leader's work has stopped
		return err
	}
	return errLostLease
}

// electionLock is the Lease lock of identity. It reads and writes the Lease with its own client
// of cfg, outside the fence, so that the elector can renew (or release) the Lease when the fence
// is closed; and it tells the fence of every acquire, renewal and loss.
func electionLock(cfg *rest.Config, fence *writeFence, le LeaderElection, identity string) (resourcelock.Interface, error) {
	leases, err := coordinationv1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	return fence.lock(&resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: le.ID, Namespace: le.Namespace},
		Client:     leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}), nil
}
