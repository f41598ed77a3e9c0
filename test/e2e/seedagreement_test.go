//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"metacel.dev/metacel/runtime/policytest"
)

// This file's name puts its test after most others (go test runs a package's tests in the order
// of its files' names): the parents it deletes wait for the garbage collector (a foreground
// deletion), which learns the kinds of the CRDs TestMain installs only at its next discovery, up
// to 30 s later (kube-controller-manager's fixed period). Run first, as agreement_test.go did, the
// test waited those 26 s out; run later, the collector knows them.

// TestTheSeedTestsAgreeWithTheCluster runs the first sync of each seed policy test that starts
// from its parent and related objects alone on the cluster: the objects the test gives are
// created as given, the runtime syncs the parent, and the first status it writes must be the
// status `metacel test` expects. Offline and cluster decide what a sync writes, and the status
// that follows, with the same code (package decide); this checks that they agree where it
// matters, on the API server.
func TestTheSeedTestsAgreeWithTheCluster(t *testing.T) {
	startRuntime(t, policies)
	files, err := filepath.Glob(filepath.Join(repo, "test", "policies", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("seed tests: %v", err)
	}
	compared := 0
	for _, file := range files {
		syncs, err := policytest.FirstSyncs(t.Context(), file)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range syncs {
			t.Run(s.Name, func(t *testing.T) {
				status, refused := firstStatusWritten(t, s)
				if refused != nil {
					if !s.Expect.Has["error"] {
						t.Fatalf("the API server refused the parent: %v", refused)
					}
					return // a parent the CRD refuses: `metacel test` expects the error
				}
				compared++
				if diff := s.Expect.StatusDiff(untimed(status)); diff != "" {
					t.Errorf("the status the runtime wrote first differs from what `metacel test` expects (- expected, + cluster):\n%s", diff)
				}
			})
		}
	}
	if compared < 5 {
		t.Errorf("compared %d first syncs, want at least one per seed policy", compared)
	}
}

// firstStatusWritten creates a first sync's related objects and parent as the test gives them
// (deleted when the test ends), and returns the first status the runtime writes on the parent;
// or the API server's refusal of the parent.
func firstStatusWritten(t *testing.T, s policytest.FirstSync) (map[string]any, error) {
	t.Helper()
	for _, obj := range s.Related {
		if err := createGiven(t, obj); err != nil {
			t.Fatalf("the API server refused %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	gvr := resourceOf(t, s.Parent)
	parents := cluster.dynamic.Resource(gvr).Namespace(s.Parent.GetNamespace())
	byName := metav1.ListOptions{FieldSelector: "metadata.name=" + s.Parent.GetName()}
	w, err := parents.Watch(t.Context(), byName)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { w.Stop() }()
	if err := createGiven(t, s.Parent); err != nil {
		return nil, err
	}
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok { // the API server ended the watch: go on from the last version seen
				if w, err = parents.Watch(t.Context(), byName); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if ev.Type != watch.Modified && ev.Type != watch.Added {
				continue
			}
			obj, _ := ev.Object.(*unstructured.Unstructured)
			if obj == nil {
				continue
			}
			byName.ResourceVersion = obj.GetResourceVersion()
			if status, _ := obj.Object["status"].(map[string]any); status["conditions"] != nil {
				return status, nil
			}
		case <-deadline:
			t.Fatalf("no status written on %s %s/%s in %s", s.Parent.GetKind(), s.Parent.GetNamespace(), s.Parent.GetName(), wait)
		}
	}
}

// createGiven creates an object as a test gives it, its namespace first when missing, and
// deletes it when the test ends; an object that exists already is left as it is. It returns the
// API server's refusal.
func createGiven(t *testing.T, obj *unstructured.Unstructured) error {
	t.Helper()
	if ns := obj.GetNamespace(); ns != "" {
		namespace := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}
		if err := createGiven(t, namespace); err != nil {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	gvr := resourceOf(t, obj)
	client := cluster.dynamic.Resource(gvr).Namespace(obj.GetNamespace())
	_, err := client.Create(t.Context(), obj.DeepCopy(), metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsInvalid(err):
		return err
	case err != nil:
		t.Fatalf("create %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	if gvr.Resource == "namespaces" && obj.GetName() == "default" {
		return nil
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), gcWait)
		defer cancel()
		foreground := metav1.DeletePropagationForeground
		_ = client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &foreground})
		// the next test creates objects of the same names: wait until they are gone
		for {
			_, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return
			}
			select {
			case <-ctx.Done():
				t.Errorf("%s %s/%s not deleted in %s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), gcWait, err)
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	return nil
}

// untimed is a status without its conditions' lastTransitionTime: an offline sync has no clock.
func untimed(status map[string]any) map[string]any {
	out := runtime.DeepCopyJSON(status)
	conds, _ := out["conditions"].([]any)
	for _, c := range conds {
		delete(c.(map[string]any), "lastTransitionTime")
	}
	return out
}

// resourceOf finds the resource of an object's kind from the cluster's discovery.
func resourceOf(t *testing.T, obj *unstructured.Unstructured) schema.GroupVersionResource {
	t.Helper()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cluster.kube.Discovery()))
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("the resource of %s: %v", gvk, err)
	}
	return mapping.Resource
}
