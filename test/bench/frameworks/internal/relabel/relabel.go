// Package relabel is the benchmark's policy change for the controller-runtime baselines, what
// metacel gets by a rewritten policy file: a file of labels every child carries beside its own
// (--child-labels), read at start and again on SIGHUP. On SIGHUP it sends a generic event for every
// parent in the manager's cache, so that each is reconciled with the new labels; a controller
// watches them with WatchesRawSource(relabeler.Source(...)).
package relabel

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"
	"sigs.k8s.io/yaml"
)

// Relabeler holds the labels of --child-labels and tells a controller when they change.
type Relabeler struct {
	path    string
	labels  atomic.Pointer[map[string]string]
	hangUps chan os.Signal
	events  chan event.GenericEvent
	reader  client.Reader
	newList func() client.ObjectList
}

// New reads the labels of path (none when path is empty) and starts listening for SIGHUP.
func New(path string) (*Relabeler, error) {
	r := &Relabeler{path: path, hangUps: make(chan os.Signal, 1), events: make(chan event.GenericEvent)}
	// before anything else: SIGHUP's default action ends the process
	signal.Notify(r.hangUps, syscall.SIGHUP)
	if err := r.read(); err != nil {
		return nil, err
	}
	return r, nil
}

// Labels are the labels every child carries beside its own.
func (r *Relabeler) Labels() map[string]string { return maps.Clone(*r.labels.Load()) }

// Source is the source of the generic events sent on SIGHUP, one per parent that reader lists
// into newList().
func (r *Relabeler) Source(reader client.Reader, newList func() client.ObjectList) source.Source {
	r.reader, r.newList = reader, newList
	return source.Channel(r.events, &handler.EnqueueRequestForObject{})
}

// Start is a manager.Runnable: at each SIGHUP it reads the labels again and enqueues every parent.
func (r *Relabeler) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("relabel")
	for {
		select {
		case <-ctx.Done():
			signal.Stop(r.hangUps)
			return nil
		case <-r.hangUps:
		}
		if err := r.read(); err != nil {
			log.Error(err, "Labels not reloaded; keeping the last")
			continue
		}
		if err := r.enqueueAll(ctx); err != nil {
			return err
		}
	}
}

// read reads the labels of the file.
func (r *Relabeler) read() error {
	labels := map[string]string{}
	if r.path != "" {
		raw, err := os.ReadFile(r.path)
		if err != nil {
			return fmt.Errorf("read --child-labels: %w", err)
		}
		if err := yaml.UnmarshalStrict(raw, &labels); err != nil {
			return fmt.Errorf("--child-labels %s: %w", r.path, err)
		}
	}
	r.labels.Store(&labels)
	return nil
}

// enqueueAll sends a generic event for every parent in the cache.
func (r *Relabeler) enqueueAll(ctx context.Context) error {
	if r.reader == nil {
		return nil
	}
	list := r.newList()
	if err := r.reader.List(ctx, list); err != nil {
		return fmt.Errorf("list the parents: %w", err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("list the parents: %w", err)
	}
	logf.FromContext(ctx).Info("Labels reloaded", "labels", r.Labels(), "parents", len(items))
	for _, item := range items {
		if obj, ok := item.(client.Object); ok {
			select {
			case r.events <- event.GenericEvent{Object: obj}:
			case <-ctx.Done():
				return nil
			}
		}
	}
	return nil
}

// HasLabels says whether have carries every one of want.
func HasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
