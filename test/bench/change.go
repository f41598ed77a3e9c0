//go:build e2e

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
)

// The policy change, told to each controller: every Pod gains this label, so every parent's Pod
// is replaced. metacel's policy file is rewritten (its Pods' Recreate: deleted, then created anew
// once the deletion is seen); the hand-written controller's --pod-labels file is rewritten and
// it is sent SIGHUP (it does the same: delete, wait for the Pod informer's deletion event, create).
const (
	revisionLabel = "metacel-bench/revision"
	revisionValue = "2"
	podLabels     = "          labels:\n"
)

// podLabelsFile is the file of child labels holding labels: the hand-written controller's and the
// Python one's --pod-labels, the controller-runtime ones' --child-labels.
func podLabelsFile(labels map[string]string) ([]byte, error) {
	if labels == nil {
		labels = map[string]string{}
	}
	return yaml.Marshal(labels)
}

// podState is where a Pod stands in a policy change: created anew (it carries the label and is
// not being deleted: the controller's part done), and replaced (created anew and, on a cluster
// with nodes, also bound and Running: the scheduler's and the node's part done too).
func podState(p *corev1.Pod, nodes bool) (created, replaced bool) {
	created = p.Labels[revisionLabel] == revisionValue && p.DeletionTimestamp == nil
	return created, created && (!nodes || boundAndRunning(p))
}

// boundAndRunning says whether a Pod is on a node and Running, and not being deleted.
func boundAndRunning(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
}

// replacements follow the children (Pods, or Deployments updated in place) through a policy change: when the first is replaced, when every
// one has been created anew, and when every one has been replaced. A Pod counts once for each.
type replacements struct {
	mu                          sync.Mutex
	child                       childKind
	want                        int
	nodes                       bool
	created, replaced           map[string]bool
	first, allCreated, allReady time.Time
	all                         chan struct{} // closed when every Pod is replaced
}

func newReplacements(child childKind, want int, nodes bool) *replacements {
	return &replacements{child: child, want: want, nodes: nodes, created: map[string]bool{}, replaced: map[string]bool{}, all: make(chan struct{})}
}

// watchReplacements starts an informer of r's children in ns (the load client's) feeding r.
func watchReplacements(ctx context.Context, cfg *rest.Config, ns string, r *replacements) error {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pods := r.child.informer(informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns)))
	see := func(obj any) { r.see(obj, time.Now()) }
	_, _ = pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
	})
	go pods.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		return errors.New("load client: the children's cache did not sync")
	}
	return nil
}

// see records a child as an informer reports it at now.
func (r *replacements) see(obj any, now time.Time) {
	name, created, replaced := r.child.changed(obj, r.nodes)
	if name == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if created && !r.created[name] {
		r.created[name] = true
		if len(r.created) == r.want {
			r.allCreated = now
		}
	}
	if replaced && !r.replaced[name] {
		r.replaced[name] = true
		if len(r.replaced) == 1 {
			r.first = now
		}
		if len(r.replaced) == r.want {
			r.allReady = now
			close(r.all)
		}
	}
}

func (r *replacements) state() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprintf("%d of %d %s %s, %d replaced", len(r.created), r.want, r.child.noun, r.child.changedAs, len(r.replaced))
}

// tellChange tells the controller of p the policy change of job j at the path it was started with
// (metacel: its policy file; the others: their file of child labels), through a rename as an
// editor or the kubelet would write it, and for the others a SIGHUP; it returns when the
// controller was told.
func tellChange(p *proc, j *job, path string) (time.Time, error) {
	if p.kind != metacel {
		changed, err := podLabelsFile(map[string]string{revisionLabel: revisionValue})
		if err != nil {
			return time.Time{}, err
		}
		return tellFile(p, path, changed)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}, err
	}
	changed, err := j.revise(old)
	if err != nil {
		return time.Time{}, err
	}
	return tellFile(p, path, changed)
}

// tellFile writes content to the file at path that p was started with, through a rename, and
// sends the controllers but metacel (which watches its policy files) a SIGHUP; it returns when p
// was told: the rename, or the signal.
func tellFile(p *proc, path string, content []byte) (time.Time, error) {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, content, 0o644); err != nil {
		return time.Time{}, err
	}
	start := time.Now()
	if err := os.Rename(tmp, path); err != nil {
		return start, err
	}
	if p.kind != metacel {
		start = time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			return start, err
		}
	}
	return start, nil
}

// changePolicy tells the controller the policy change and records the time until the first Pod
// and every Pod is replaced, and every Pod created anew, and its requests until quiet (on a
// cluster with nodes the scheduler's and kwok's taken out).
func (b *bench) changePolicy(ctx context.Context, s *stage, p *proc, path string, r *result) error {
	watcher := newReplacements(s.job.child, b.o.parents, len(s.cl.nodes) > 0)
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	if err := watchReplacements(watchCtx, s.load, benchNamespace, watcher); err != nil {
		return err
	}
	w0, err := s.cl.window(ctx, s.own, p)
	if err != nil {
		return err
	}
	start, err := tellChange(p, s.job, path)
	if err != nil {
		return err
	}
	deadline := time.After(b.o.timeout)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("policy change: %s after %s", watcher.state(), b.o.timeout)
		case <-watcher.all:
			done = true
		case <-time.After(30 * time.Second):
			logf("  policy change: %s", watcher.state())
		}
		if err := p.alive(); err != nil {
			return err
		}
	}
	r.changeFirst, r.changeCreated, r.changeAll = watcher.first.Sub(start), watcher.allCreated.Sub(start), watcher.allReady.Sub(start)
	w1, err := b.waitQuiet(ctx, s.cl, s.own, work, p)
	if err != nil {
		return err
	}
	r.changed, r.changedControlPlane, err = s.cl.attribute(w0, w1)
	return err
}
