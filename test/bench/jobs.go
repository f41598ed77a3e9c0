//go:build e2e

package main

import (
	"bytes"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// job is what every controller of a run does for each parent: MyApp -> Pod (every configuration
// but one), or Memcached -> Deployment (-configs frameworks, against controller-runtime).
type job struct {
	name   string // the policy's, and the controller's in its metrics
	kind   string // the parent's
	parent schema.GroupVersionResource
	file   string // of the CRD (crds/), the sample (samples/) and the bench's policy (test/bench/testdata/)
	// podName adds status.podName to the CRD (the bench's MyApp status)
	podName bool
	child   childKind
	// parentDone says whether a parent's status is written, as ctl writes it
	parentDone func(u *unstructured.Unstructured, ctl string) bool
	// marker is the one run of lines of the bench's policy that revise replaces with insert, which
	// adds the revision label to the child template's labels
	marker, insert string
	// edit is the merge patch of a parent that makes its child written again, value its new value
	// (nil: no edit measured); its child's first write is what childKind.written sees
	edit func(value string) []byte
}

// childKind is how the load client follows a job's children through an informer.
type childKind struct {
	// noun names the children in the bench's log, changedAs what the policy change does to one
	noun, changedAs string
	informer        func(informers.SharedInformerFactory) cache.SharedIndexInformer
	// nameOf is the child's name given the parent's
	nameOf func(parent string) string
	// state: the child's name, whether it is as the burst wants it, and bound and Running
	state func(obj any) (name string, ok, running bool)
	// changed: the child's name, whether it carries the revision label and is not being deleted
	// (the controller's part of the change), and whether with nodes it is also bound and Running
	changed func(obj any, nodes bool) (name string, created, replaced bool)
	// written: the child's name when an event (of an update from old, or a deletion) is its first
	// write after its parent's edit, else "" (nil: the job has no edit)
	written func(old, obj any, deleted bool) string
}

var (
	myAppJob = &job{
		name: "myapp", kind: "MyApp", parent: myAppsGVR, file: "myapp.yaml", podName: true,
		child: podChild, parentDone: myAppDone, edit: bannerPatch,
		marker: podLabels, insert: podLabels + "            " + revisionLabel + ": \"" + revisionValue + "\"\n",
	}
	memcachedJob = &job{
		name: "memcached", kind: "Memcached", file: "memcached.yaml",
		parent: schema.GroupVersionResource{Group: "cache.example.com", Version: "v1alpha1", Resource: "memcacheds"},
		child:  deploymentChild, parentDone: memcachedDone,
		marker: deploymentName, insert: deploymentName + "          labels:\n            " + revisionLabel + ": \"" + revisionValue + "\"\n",
	}
)

// deploymentName is the Deployment's name in testdata/memcached.yaml, after which the policy change
// puts its labels.
const deploymentName = "        metadata:\n          name: \"${parent.metadata.name}\"\n"

// revise is the bench's policy of j with revisionLabel among its child's labels.
func (j *job) revise(policy []byte) ([]byte, error) {
	if bytes.Count(policy, []byte(j.marker)) != 1 {
		return nil, fmt.Errorf("testdata/%s: want exactly one child template labels: block", j.file)
	}
	return bytes.Replace(policy, []byte(j.marker), []byte(j.insert), 1), nil
}

// isDone is the load client's test of a converged parent as ctl writes it; metacel's also has its
// Synced condition True.
func (j *job) isDone(ctl string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		if !j.parentDone(u, ctl) {
			return false
		}
		return ctl != metacel || condition(u, "Synced") == "True"
	}
}

// myAppDone: status.podName is set.
func myAppDone(u *unstructured.Unstructured, _ string) bool {
	name, _, _ := unstructured.NestedString(u.Object, "status", "podName")
	return name == u.GetName()+"-pod"
}

// memcachedDone: the Available condition is there (False on a control plane without
// kube-controller-manager: no Deployment's replica becomes available).
func memcachedDone(u *unstructured.Unstructured, _ string) bool {
	return condition(u, "Available") != ""
}

// condition is the status of a parent's condition of that type, or "".
func condition(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

var podChild = childKind{
	noun: "Pods", changedAs: "created anew",
	informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().Pods().Informer()
	},
	nameOf: func(parent string) string { return parent + "-pod" },
	state: func(obj any) (string, bool, bool) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return "", false, false
		}
		return p.Name, true, boundAndRunning(p)
	},
	changed: func(obj any, nodes bool) (string, bool, bool) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return "", false, false
		}
		created, replaced := podState(p, nodes)
		return p.Name, created, replaced
	},
	written: podWritten,
}

// podWritten: a Pod's Recreate begins with its deletion, seen as its deletion event (a Pod on no
// node goes at once) or, on a node, as the update that sets its deletionTimestamp.
func podWritten(old, obj any, deleted bool) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return ""
	}
	if deleted {
		return p.Name
	}
	if was, ok := old.(*corev1.Pod); ok && was.DeletionTimestamp == nil && p.DeletionTimestamp != nil {
		return p.Name
	}
	return ""
}

// memcachedSize is samples/memcached.yaml's spec.size, which every Deployment must have.
const memcachedSize = 3

var deploymentChild = childKind{
	noun: "Deployments", changedAs: "updated",
	informer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Apps().V1().Deployments().Informer()
	},
	nameOf: func(parent string) string { return parent },
	state: func(obj any) (string, bool, bool) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return "", false, false
		}
		return d.Name, d.Spec.Replicas != nil && *d.Spec.Replicas == memcachedSize, false
	},
	changed: func(obj any, _ bool) (string, bool, bool) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			return "", false, false
		}
		updated := d.Labels[revisionLabel] == revisionValue && d.DeletionTimestamp == nil
		return d.Name, updated, updated
	},
}

// jobs are the jobs a run's configurations need.
func jobsOf(configs []benchConfig) []*job {
	jobs := []*job{myAppJob} // sharded and writecost run MyApps too
	for _, c := range configs {
		if c.job != nil && c.job != myAppJob {
			jobs = append(jobs, c.job)
		}
	}
	return jobs
}

// jobOf is a configuration's job.
func (c benchConfig) jobOf() *job {
	if c.job == nil {
		return myAppJob
	}
	return c.job
}
