//go:build e2e

// Command handwritten is the benchmark's baseline: the MyApp operator as a minimal hand-written
// client-go controller, the way one writes it without a framework. Informers on MyApps and on
// its Pods (by label), a rate-limited workqueue, and a sync that creates the Pod <name>-pod when
// the cache has none (POST) and writes status.podName once (PUT .../status). No events, no
// server-side apply, no conditions.
//
// Its flags mirror `metacel run`'s (--kube-api-qps, --kube-api-burst, --workers,
// --metrics-bind-address), and it serves the metrics the benchmark reads from metacel:
// controller_runtime_reconcile_total{controller="myapp"} and workqueue_depth{name="myapp"},
// with /readyz once its caches have synced.
//
// Its Pods go as protobuf, client-go's default for the built-in kinds of a typed client; with
// --pods-as-json as JSON (-configs json; metacel sends them as JSON and watches them as
// protobuf).
// With --conditions its status also carries what metacel's contract puts in every parent's status,
// observedGeneration and the Synced and Ready conditions, still in one PUT (-configs conditions).
//
// --pod-labels is the benchmark's policy change: a file of labels every Pod carries beside its
// own, read at start and again on SIGHUP. A Pod without them is replaced as metacel's Recreate
// replaces a child whose spec cannot change in place: deleted (its UID as precondition), and
// created anew when the Pod informer reports it gone. A Pod being deleted is waited for, not
// written: on a node its deletion is graceful, and it lingers with a deletionTimestamp until the
// node lets it go. Labels could be patched in place; a Pod's spec could not, and the change stands
// for one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

var myApps = schema.GroupVersionResource{Group: "demo.rtfm.co.ua", Version: "v1", Resource: "myapps"}

const (
	name         = "myapp"
	managedLabel = "app.kubernetes.io/managed-by"
	managedBy    = "myapp-handwritten"
)

func main() {
	var o options
	var qps float64
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file")
	flag.StringVar(&o.namespace, "namespace", "", "namespace to watch (default: all)")
	flag.Float64Var(&qps, "kube-api-qps", 50, "queries per second to the API server (negative: no client-side limit)")
	flag.IntVar(&o.burst, "kube-api-burst", 100, "burst of queries to the API server")
	flag.IntVar(&o.workers, "workers", 4, "concurrent syncs")
	flag.DurationVar(&o.resync, "resync", 30*time.Second, "resync period of the MyApp informer (0: none)")
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", "127.0.0.1:8080", "address of /metrics and /readyz")
	podsAsJSON := flag.Bool("pods-as-json", false, "send and watch Pods as JSON instead of protobuf (client-go's default for a typed client)")
	flag.StringVar(&o.podLabels, "pod-labels", "", "a file holding a YAML map of labels every Pod carries beside its own, read at start and again on SIGHUP; a Pod without them is deleted and created anew once it is gone")
	flag.BoolVar(&o.conditions, "conditions", false, "write status.observedGeneration and the Synced and Ready conditions beside status.podName, as metacel's contract does (in the same one PUT)")
	klog.InitFlags(nil)
	flag.Parse()
	o.qps = float32(qps)
	if *podsAsJSON {
		o.contentType = "application/json" // else client-go's default
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "handwritten:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	kubeconfig, namespace, metricsAddr string
	qps                                float32
	burst, workers                     int
	resync                             time.Duration
	contentType                        string // of the Pods: "" is client-go's default, protobuf
	conditions                         bool   // --conditions
	podLabels                          string // --pod-labels
}

type controller struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	apps    cache.SharedIndexInformer
	pods    corelisters.PodLister
	queue   workqueue.TypedRateLimitingInterface[string]
	syncs   *prometheus.CounterVec
	// conditions: the status carries observedGeneration and the Synced and Ready conditions too
	conditions bool
	// labels every Pod carries beside its own (--pod-labels), replaced on SIGHUP
	labels atomic.Pointer[map[string]string]
}

func run(ctx context.Context, o options) error {
	// before anything else: SIGHUP's default action ends the process
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst, cfg.UserAgent, cfg.ContentType = o.qps, o.burst, managedBy, o.contentType
	if o.qps > 0 {
		// one budget for the process, as metacel's (its children and status share one client):
		// the typed and the dynamic client would otherwise get one limiter each
		cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(o.qps, o.burst)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	appFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, o.resync, o.namespace, nil)
	podFactory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(o.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = managedLabel + "=" + managedBy }))
	c := &controller{
		kube:    kube,
		dynamic: dyn,
		apps:    appFactory.ForResource(myApps).Informer(),
		pods:    podFactory.Core().V1().Pods().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		syncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "controller_runtime_reconcile_total", Help: "Syncs by result.",
		}, []string{"controller", "result"}),
		conditions: o.conditions,
	}
	if err := c.readPodLabels(o.podLabels); err != nil {
		return err
	}
	defer c.queue.ShutDown()
	if _, err := c.apps.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) }, // a resync too
		DeleteFunc: c.enqueue,
	}); err != nil {
		return err
	}
	if _, err := podFactory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOwner,
		UpdateFunc: func(_, obj any) { c.enqueueOwner(obj) },
		DeleteFunc: c.enqueueOwner,
	}); err != nil {
		return err
	}

	var ready atomic.Bool
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.syncs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "workqueue_depth", Help: "Current depth of the workqueue.", ConstLabels: prometheus.Labels{"name": name},
	}, func() float64 { return float64(c.queue.Len()) }))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
		}
	})
	ln, err := net.Listen("tcp", o.metricsAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()

	appFactory.Start(ctx.Done())
	podFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.apps.HasSynced, podFactory.Core().V1().Pods().Informer().HasSynced) {
		return errors.New("caches did not sync")
	}
	ready.Store(true)
	klog.InfoS("Started", "workers", o.workers, "qps", o.qps, "burst", o.burst, "resync", o.resync)
	var wg sync.WaitGroup
	for range o.workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker, time.Second) })
	}
	wg.Go(func() { c.reloadOnHangUp(ctx, hup, o.podLabels) })
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	appFactory.Shutdown()
	podFactory.Shutdown()
	return nil
}

// readPodLabels reads the labels of --pod-labels (none without the flag).
func (c *controller) readPodLabels(path string) error {
	labels := map[string]string{}
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := yaml.UnmarshalStrict(raw, &labels); err != nil {
			return fmt.Errorf("--pod-labels %s: %w", path, err)
		}
	}
	c.labels.Store(&labels)
	return nil
}

// reloadOnHangUp reads --pod-labels again at each SIGHUP and syncs every MyApp.
func (c *controller) reloadOnHangUp(ctx context.Context, hup <-chan os.Signal, path string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if err := c.readPodLabels(path); err != nil {
			klog.ErrorS(err, "Pod labels not reloaded; keeping the last")
			continue
		}
		keys := c.apps.GetStore().ListKeys()
		klog.InfoS("Pod labels reloaded", "labels", *c.labels.Load(), "myapps", len(keys))
		for _, key := range keys {
			c.queue.Add(key)
		}
	}
}

func (c *controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// enqueueOwner enqueues the MyApp that controls a Pod.
func (c *controller) enqueueOwner(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "MyApp" {
		c.queue.Add(pod.Namespace + "/" + ref.Name)
	}
}

func (c *controller) worker(ctx context.Context) {
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		if err := c.sync(ctx, key); err != nil {
			klog.ErrorS(err, "Sync failed", "key", key)
			c.queue.AddRateLimited(key)
			c.syncs.WithLabelValues(name, "error").Inc()
		} else {
			c.queue.Forget(key)
			c.syncs.WithLabelValues(name, "success").Inc()
		}
		c.queue.Done(key)
	}
}

// podStep is what a sync does to a MyApp's Pod.
type podStep int

const (
	keepPod   podStep = iota // it is as wanted
	createPod                // there is none
	deletePod                // it lacks a label: replaced, its deletion first
	awaitPod                 // it is being deleted: its deletion event brings the MyApp back
)

// stepFor decides podStep for the Pod in the cache (nil: none) and the labels it must carry.
func stepFor(pod *corev1.Pod, labels map[string]string) podStep {
	switch {
	case pod == nil:
		return createPod
	case pod.DeletionTimestamp != nil:
		return awaitPod
	}
	for k, v := range labels {
		if got, ok := pod.Labels[k]; !ok || got != v {
			return deletePod
		}
	}
	return keepPod
}

// sync creates the MyApp's Pod when the cache has none (and replaces one without the labels of
// --pod-labels: deletes it, and creates it when its deletion comes through the informer), then
// writes status.podName if it differs.
func (c *controller) sync(ctx context.Context, key string) error {
	obj, exists, err := c.apps.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err // deleted: the garbage collector removes the Pod (its ownerReference)
	}
	app := obj.(*unstructured.Unstructured)
	podName := app.GetName() + "-pod"
	pod, err := c.pods.Pods(app.GetNamespace()).Get(podName)
	if apierrors.IsNotFound(err) {
		pod, err = nil, nil
	}
	if err != nil {
		return err
	}
	labels := *c.labels.Load()
	switch stepFor(pod, labels) {
	case createPod:
		_, err := c.kube.CoreV1().Pods(app.GetNamespace()).Create(ctx, newPod(app, podName, labels), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create pod %s: %w", podName, err)
		}
	case deletePod:
		err := c.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(pod.UID))})
		// gone already, or another Pod by now (a stale cache): the informer brings the MyApp back
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete pod %s: %w", podName, err)
		}
	case keepPod, awaitPod:
	}
	if c.statusWritten(app, podName) {
		return nil
	}
	app = app.DeepCopy()
	if err := c.setStatus(app, podName); err != nil {
		return err
	}
	_, err = c.dynamic.Resource(myApps).Namespace(app.GetNamespace()).UpdateStatus(ctx, app, metav1.UpdateOptions{})
	return err // a conflict is retried from the cache
}

// statusWritten reports whether app's status says what setStatus would write.
func (c *controller) statusWritten(app *unstructured.Unstructured, podName string) bool {
	got, _, _ := unstructured.NestedString(app.Object, "status", "podName")
	if !c.conditions {
		return got == podName
	}
	observed, _, _ := unstructured.NestedInt64(app.Object, "status", "observedGeneration")
	return got == podName && observed == app.GetGeneration()
}

// setStatus sets status.podName in app, and with --conditions observedGeneration and the Synced
// and Ready conditions (meta.SetStatusCondition keeps a condition's lastTransitionTime while its
// status holds).
func (c *controller) setStatus(app *unstructured.Unstructured, podName string) error {
	if err := unstructured.SetNestedField(app.Object, podName, "status", "podName"); err != nil || !c.conditions {
		return err
	}
	var conds []metav1.Condition
	raw, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	for _, item := range raw {
		var cond metav1.Condition
		if m, ok := item.(map[string]any); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &cond) == nil {
			conds = append(conds, cond)
		}
	}
	generation := app.GetGeneration()
	meta.SetStatusCondition(&conds, metav1.Condition{Type: "Synced", Status: metav1.ConditionTrue, Reason: "Synced", Message: "1 child applied", ObservedGeneration: generation})
	meta.SetStatusCondition(&conds, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", Message: "1 child ready", ObservedGeneration: generation})
	list := make([]any, len(conds))
	for i := range conds {
		cond, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err != nil {
			return err
		}
		list[i] = cond
	}
	if err := unstructured.SetNestedSlice(app.Object, list, "status", "conditions"); err != nil {
		return err
	}
	return unstructured.SetNestedField(app.Object, generation, "status", "observedGeneration")
}

// newPod is the Pod of policies/myapp.yaml: the MyApp's image, its banner echoed first; it
// carries labels beside its own.
func newPod(app *unstructured.Unstructured, podName string, labels map[string]string) *corev1.Pod {
	image, _, _ := unstructured.NestedString(app.Object, "spec", "image")
	container := corev1.Container{
		Name:    app.GetName(),
		Image:   image,
		Command: []string{"/bin/sh", "-c", `if [ -n "$BANNER" ]; then echo "$BANNER"; fi; exec sleep infinity`},
		Ports:   []corev1.ContainerPort{{ContainerPort: 80}},
	}
	if banner, ok, _ := unstructured.NestedString(app.Object, "spec", "banner"); ok {
		container.Env = []corev1.EnvVar{{Name: "BANNER", Value: banner}}
	}
	own := maps.Clone(labels)
	if own == nil {
		own = map[string]string{}
	}
	own["app"], own[managedLabel] = app.GetName(), managedBy
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            podName,
			Namespace:       app.GetNamespace(),
			Labels:          own,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(app, app.GroupVersionKind())},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container}},
	}
}
