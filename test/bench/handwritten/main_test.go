//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A Pod without the labels of --pod-labels is replaced: deleted first, and created once it is
// gone; one being deleted (on a node, gracefully) is waited for, never written.
func TestAPodWithoutTheLabelsIsDeletedThenCreatedOnceGone(t *testing.T) {
	now := metav1.Now()
	pod := func(labels map[string]string, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-pod", Labels: labels}}
		if deleting {
			p.DeletionTimestamp = &now
		}
		return p
	}
	revision := map[string]string{"metacel-bench/revision": "2"}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		labels map[string]string
		want   podStep
	}{
		{"none: created", nil, revision, createPod},
		{"none, no labels asked: created", nil, nil, createPod},
		{"no labels asked: kept", pod(map[string]string{"app": "a"}, false), nil, keepPod},
		{"the label missing: deleted", pod(map[string]string{"app": "a"}, false), revision, deletePod},
		{"the label at another value: deleted", pod(map[string]string{"metacel-bench/revision": "1"}, false), revision, deletePod},
		{"the label there: kept", pod(map[string]string{"app": "a", "metacel-bench/revision": "2"}, false), revision, keepPod},
		{"being deleted, the label missing: awaited", pod(map[string]string{"app": "a"}, true), revision, awaitPod},
		{"being deleted, the label there: awaited", pod(revision, true), revision, awaitPod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stepFor(tt.pod, tt.labels); got != tt.want {
				t.Errorf("stepFor = %v, want %v", got, tt.want)
			}
		})
	}
}

// A created Pod carries the labels of --pod-labels, and its own whatever they say.
func TestANewPodCarriesTheLabels(t *testing.T) {
	app := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"image": "busybox"}}}
	app.SetAPIVersion("demo.rtfm.co.ua/v1")
	app.SetKind("MyApp")
	app.SetName("a")
	app.SetNamespace("bench")
	labels := map[string]string{"metacel-bench/revision": "2", managedLabel: "someone-else"}
	p := newPod(app, "a-pod", labels)
	if p.Labels["metacel-bench/revision"] != "2" || p.Labels["app"] != "a" || p.Labels[managedLabel] != managedBy {
		t.Errorf("labels %v", p.Labels)
	}
	if labels[managedLabel] != "someone-else" {
		t.Error("newPod changed the labels it was given")
	}
	if p := newPod(app, "a-pod", nil); len(p.Labels) != 2 {
		t.Errorf("no labels asked: %v", p.Labels)
	}
}

// --pod-labels is a YAML map; a file that is not one is refused and the labels stay as they were
// (a SIGHUP over a bad file changes nothing).
func TestPodLabelsAreReadFromTheirFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pod-labels.yaml")
	c := &controller{}
	if err := c.readPodLabels(""); err != nil || len(*c.labels.Load()) != 0 {
		t.Fatalf("no flag: %v, %v", err, *c.labels.Load())
	}
	if err := os.WriteFile(path, []byte("metacel-bench/revision: \"2\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.readPodLabels(path); err != nil || (*c.labels.Load())["metacel-bench/revision"] != "2" {
		t.Fatalf("got %v, %v", err, *c.labels.Load())
	}
	if err := os.WriteFile(path, []byte("- not a map\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.readPodLabels(path); err == nil {
		t.Error("a list was taken for labels")
	}
	if (*c.labels.Load())["metacel-bench/revision"] != "2" {
		t.Errorf("a bad file changed the labels: %v", *c.labels.Load())
	}
}
