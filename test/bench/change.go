//go:build e2e

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The policy change of a metacel run: every Pod gains this label, so every parent re-renders and
// every child is written again (the policy's Recreate: deleted, then created anew).
const (
	revisionLabel = "metacel-bench/revision"
	podLabels     = "          labels:\n"
)

// revised is the policy with revisionLabel: "2" among the Pod template's labels.
func revised(policy []byte) ([]byte, error) {
	if bytes.Count(policy, []byte(podLabels)) != 1 {
		return nil, errors.New("testdata/myapp.yaml: want exactly one Pod template labels: block")
	}
	return bytes.Replace(policy, []byte(podLabels), []byte(podLabels+"            "+revisionLabel+": \"2\"\n"), 1), nil
}

// relabelled follows the Pods that carry revisionLabel: the time the first appears and the time
// there are want of them.
type relabelled struct {
	mu          sync.Mutex
	want        int
	names       map[string]bool
	first, last time.Time
	all         chan struct{}
}

func watchRelabelled(ctx context.Context, cfg *rest.Config, ns string, want int) (*relabelled, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	r := &relabelled{want: want, names: map[string]bool{}, all: make(chan struct{})}
	pods := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns)).Core().V1().Pods().Informer()
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.see,
		UpdateFunc: func(_, obj any) { r.see(obj) },
	})
	go pods.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		return nil, errors.New("load client: the Pod cache did not sync")
	}
	return r, nil
}

func (r *relabelled) see(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Labels[revisionLabel] != "2" || p.DeletionTimestamp != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names[p.Name] {
		return
	}
	r.names[p.Name] = true
	now := time.Now()
	if len(r.names) == 1 {
		r.first = now
	}
	if len(r.names) == r.want {
		r.last = now
		close(r.all)
	}
}

func (r *relabelled) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.names)
}

// changePolicy rewrites the policy file metacel runs (through a rename, as an editor or the
// kubelet would) so that every Pod gains revisionLabel, and records the time until the first and
// every Pod carries it, and the requests until quiet.
func (b *bench) changePolicy(ctx context.Context, cl *cluster, p *proc, own *counter, policy string, load *rest.Config, r *result) error {
	watcher, err := watchRelabelled(ctx, load, benchNamespace, b.o.parents)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(policy)
	if err != nil {
		return err
	}
	changed, err := revised(old)
	if err != nil {
		return err
	}
	w0, err := cl.window(ctx, own, p)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(policy), ".myapp.yaml.tmp")
	if err := os.WriteFile(tmp, changed, 0o644); err != nil {
		return err
	}
	start := time.Now()
	if err := os.Rename(tmp, policy); err != nil {
		return err
	}
	deadline := time.After(b.o.timeout)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("policy change: %d of %d Pods relabelled after %s", watcher.count(), b.o.parents, b.o.timeout)
		case <-watcher.all:
			done = true
		case <-time.After(30 * time.Second):
			logf("  policy change: %d of %d Pods relabelled", watcher.count(), b.o.parents)
		}
		if err := p.alive(); err != nil {
			return err
		}
	}
	r.changeFirst, r.changeAll = watcher.first.Sub(start), watcher.last.Sub(start)
	w1, err := b.waitQuiet(ctx, cl, own, work, p)
	if err != nil {
		return err
	}
	r.changed, _, err = cl.attribute(w0, w1)
	return err
}
