//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/render"
)

// writeCostConfig is -configs writecost: what one write of each kind that the two controllers
// send costs the control plane (kube-apiserver and etcd CPU), measured apart from any controller.
// On 2 cores the converge is bound by the CPU of the control plane and the controller together,
// so this is where a converge's time goes on the server's side.
const writeCostConfig = "writecost"

// writeKind is one kind of write, sent once per MyApp of its own set.
type writeKind struct {
	name, who string
	send      func(ctx context.Context, w *writeCostStage, app *unstructured.Unstructured) error
}

// writeCostStage is a fresh control plane with the clients that write to it.
type writeCostStage struct {
	cl     *cluster
	writer *apply.Writer // metacel's own writer: its status apply is the request metacel sends
}

func writeKinds() []writeKind {
	return []writeKind{
		{"PUT myapps/status: status.podName", "hand-written", func(ctx context.Context, w *writeCostStage, app *unstructured.Unstructured) error {
			app = app.DeepCopy()
			if err := unstructured.SetNestedField(app.Object, app.GetName()+"-pod", "status", "podName"); err != nil {
				return err
			}
			_, err := w.cl.dynamic.Resource(myAppsGVR).Namespace(app.GetNamespace()).UpdateStatus(ctx, app, metav1.UpdateOptions{})
			return err
		}},
		{"APPLY myapps/status: podName, observedGeneration, Synced and Ready", "metacel", func(ctx context.Context, w *writeCostStage, app *unstructured.Unstructured) error {
			status, err := metacelStatus(app)
			if err != nil {
				return err
			}
			_, err = w.writer.ApplyStatus(ctx, myAppsGVR, app, status)
			return err
		}},
		{"PUT myapps/status: the same status as metacel's apply", "(neither)", func(ctx context.Context, w *writeCostStage, app *unstructured.Unstructured) error {
			status, err := metacelStatus(app)
			if err != nil {
				return err
			}
			app = app.DeepCopy()
			app.Object["status"] = status
			_, err = w.cl.dynamic.Resource(myAppsGVR).Namespace(app.GetNamespace()).UpdateStatus(ctx, app, metav1.UpdateOptions{})
			return err
		}},
		{"PATCH (merge) myapps/status: the same status as metacel's apply, guarded by resourceVersion", "(neither)", func(ctx context.Context, w *writeCostStage, app *unstructured.Unstructured) error {
			status, err := metacelStatus(app)
			if err != nil {
				return err
			}
			patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": app.GetResourceVersion()}, "status": status})
			if err != nil {
				return err
			}
			_, err = w.cl.dynamic.Resource(myAppsGVR).Namespace(app.GetNamespace()).Patch(ctx, app.GetName(), types.MergePatchType, patch,
				metav1.PatchOptions{FieldManager: apply.FieldManager}, "status")
			return err
		}},
		{"POST pods as protobuf: app and managed-by labels, owner reference", "hand-written", func(ctx context.Context, w *writeCostStage, app *unstructured.Unstructured) error {
			_, err := w.cl.kube.CoreV1().Pods(app.GetNamespace()).Create(ctx, handwrittenPod(app), metav1.CreateOptions{})
			return err
		}},
		{"POST pods as JSON: the same Pod", "(neither)", func(ctx context.Context, w *writeCostStage, app *unstructured.Unstructured) error {
			pod, err := asUnstructured(handwrittenPod(app))
			if err != nil {
				return err
			}
			_, err = w.cl.dynamic.Resource(podsGVR).Namespace(app.GetNamespace()).Create(ctx, pod, metav1.CreateOptions{})
			return err
		}},
		{"POST pods as JSON: metacel's labels and desired-hash annotation, owner reference", "metacel", func(ctx context.Context, w *writeCostStage, app *unstructured.Unstructured) error {
			labels := map[string]string{"app": app.GetName(), contract.LabelManagedBy: contract.ManagedByValue, contract.LabelChildPolicyName: "myapp", contract.LabelChildPolicyLegacy: "myapp",
				contract.LabelParentUID: string(app.GetUID()), contract.LabelChildID: "pod", contract.LabelShardSlot: "23"}
			pod, err := asUnstructured(benchPod(app, labels, map[string]string{contract.AnnotationDesiredHash: "a67155f2274bd6d0"}))
			if err != nil {
				return err
			}
			_, err = w.writer.Create(ctx, podsGVR, pod) // metacel's own request
			return err
		}},
		{"POST events: Normal Created, regarding the MyApp", "metacel", func(ctx context.Context, w *writeCostStage, app *unstructured.Unstructured) error {
			e := &eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", app.GetName(), time.Now().UnixNano()), Namespace: app.GetNamespace()},
				EventTime:  metav1.NowMicro(), ReportingController: "metacel", ReportingInstance: "bench", Action: "Create", Reason: "Created", Type: corev1.EventTypeNormal,
				Regarding: corev1.ObjectReference{Kind: app.GetKind(), APIVersion: app.GetAPIVersion(), Namespace: app.GetNamespace(), Name: app.GetName(), UID: app.GetUID()},
				Note:      "Created Pod " + app.GetNamespace() + "/" + app.GetName() + "-pod",
			}
			_, err := w.cl.kube.EventsV1().Events(app.GetNamespace()).Create(ctx, e, metav1.CreateOptions{})
			return err
		}},
	}
}

// metacelStatus is the status metacel writes for a MyApp whose Pod it created: the policy's
// podName, then observedGeneration and the runtime's conditions (render.NewStatus).
func metacelStatus(app *unstructured.Unstructured) (map[string]any, error) {
	now := metav1.Now()
	return render.NewStatus(app, map[string]any{"podName": app.GetName() + "-pod"}, []render.Condition{
		{Type: contract.ConditionSynced, Status: "True", Reason: contract.ReasonSynced, Message: "1 child applied"},
		{Type: contract.ConditionReady, Status: "True", Reason: contract.ReasonReady, Message: "1 child ready"},
	}, &now)
}

// handwrittenPod is the hand-written controller's Pod of app.
func handwrittenPod(app *unstructured.Unstructured) *corev1.Pod {
	return benchPod(app, map[string]string{"app": app.GetName(), contract.LabelManagedBy: "myapp-handwritten"}, nil)
}

// asUnstructured is pod as the dynamic client sends it.
func asUnstructured(pod *corev1.Pod) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("v1")
	u.SetKind("Pod")
	return u, nil
}

// benchPod is the MyApp policy's Pod (as the hand-written controller makes it), with labels.
func benchPod(app *unstructured.Unstructured, labels, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: app.GetName() + "-pod", Namespace: app.GetNamespace(), Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(app, app.GroupVersionKind())},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: app.GetName(), Image: "nginx:1.27", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Command: []string{"/bin/sh", "-c", `if [ -n "$BANNER" ]; then echo "$BANNER"; fi; exec sleep infinity`},
		}}},
	}
}

// writeCost is one kind's measure.
type writeCost struct {
	kind      writeKind
	serverCPU float64 // ms per write, kube-apiserver and etcd
	wall      time.Duration
	failed    int
}

// runWriteCost measures each kind of write on a fresh control plane: -parents MyApps per kind,
// sent by 5 workers with no client-side rate limit, the control plane's CPU read from /proc
// before and after.
func (b *bench) runWriteCost(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "metacel-bench-writecost-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	cl, err := startCluster(ctx, b.repo, dir, &counter{c: counts{}}, nil)
	if err != nil {
		return "", err
	}
	defer cl.stop()
	if b.version == "" {
		b.version = cl.serverVersion()
	}
	if err := cl.setup(ctx, b.repo, myAppJob); err != nil {
		return "", err
	}
	raw, err := apply.NewRawClient(cl.config)
	if err != nil {
		return "", err
	}
	w := &writeCostStage{cl: cl, writer: apply.NewWriter(cl.dynamic).WithRawClient(raw, compact.Responses{})}
	kinds := writeKinds()
	apps := make([][]*unstructured.Unstructured, len(kinds)) // a set of MyApps per kind
	for k := range apps {
		apps[k] = make([]*unstructured.Unstructured, b.o.parents)
	}
	logf("writecost: %d MyApps", len(kinds)*b.o.parents)
	create, err := measureWrites(ctx, writeKind{name: "POST myapps (the load client's, for scale)", who: "load"}, len(kinds)*b.o.parents, cl, func(i int) error {
		app, err := cl.dynamic.Resource(myAppsGVR).Namespace(benchNamespace).Create(ctx, myApp(b.sample, fmt.Sprintf("w%d-%05d", i%len(kinds), i/len(kinds))), metav1.CreateOptions{})
		apps[i%len(kinds)][i/len(kinds)] = app // nil when it failed
		return err
	})
	if err != nil {
		return "", err
	}
	results := []writeCost{create}
	for k, kind := range kinds {
		logf("writecost: %s", kind.name)
		set := apps[k]
		r, err := measureWrites(ctx, kind, len(set), cl, func(i int) error {
			if set[i] == nil {
				return fmt.Errorf("not created")
			}
			return kind.send(ctx, w, set[i])
		})
		if err != nil {
			return "", err
		}
		results = append(results, r)
	}
	return writeCostTable(b.o.parents, results), nil
}

// myApp is the sample MyApp under another name.
func myApp(sample *unstructured.Unstructured, name string) *unstructured.Unstructured {
	app := sample.DeepCopy()
	app.SetName(name)
	app.SetNamespace(benchNamespace)
	return app
}

// measureWrites sends n writes by 5 workers (write i by worker i mod 5, so that each worker's
// writes are its own) and reads the control plane's CPU around them.
func measureWrites(ctx context.Context, kind writeKind, n int, cl *cluster, write func(i int) error) (writeCost, error) {
	const workers = 5
	r := writeCost{kind: kind}
	var mu sync.Mutex
	var wg sync.WaitGroup
	before, start := cl.serverCPU(), time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n && ctx.Err() == nil; i += workers {
				if err := write(i); err != nil {
					mu.Lock()
					r.failed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	r.wall = time.Since(start)
	r.serverCPU = (cl.serverCPU() - before) * 1000 / float64(max(n, 1))
	if r.failed == n && n > 0 {
		return r, fmt.Errorf("%s: every write failed", kind.name)
	}
	return r, ctx.Err()
}

func writeCostTable(parents int, results []writeCost) string {
	var t strings.Builder
	fmt.Fprintf(&t, "\nWhat one write costs the control plane (-configs %s: %d writes of each kind on a fresh etcd + kube-apiserver, 5 workers, no client-side limit; kube-apiserver and etcd CPU from /proc):\n\n", writeCostConfig, parents)
	t.WriteString("| write | sent by | control plane CPU ms per write | wall s | failed |\n|---|---|--:|--:|--:|\n")
	for _, r := range results {
		fmt.Fprintf(&t, "| %s | %s | %.2f | %.1f | %d |\n", r.kind.name, r.kind.who, r.serverCPU, r.wall.Seconds(), r.failed)
	}
	return t.String()
}
