// Package controller holds the MyApp reconciler, as Kubebuilder scaffolds a controller and as the
// Kopf tutorial's operator behaves: a Pod <name>-pod running the image, the banner echoed first;
// a missing image reported on the MyApp; a Pod whose spec no longer matches replaced.
package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"metacel.dev/metacel/test/bench/frameworks/internal/relabel"
	demov1 "metacel.dev/metacel/test/bench/frameworks/myapp/api/v1"
)

// typeAvailableMyApp is the condition of a MyApp whose Pod exists.
const typeAvailableMyApp = "Available"

// bannerCommand prints the banner, when given, as the Pod's first log line.
const bannerCommand = `if [ -n "$BANNER" ]; then echo "$BANNER"; fi; exec sleep infinity`

// MyAppReconciler reconciles a MyApp object.
type MyAppReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// Relabeler holds the labels every Pod carries beside its own (the benchmark's policy change)
	Relabeler *relabel.Relabeler
}

// +kubebuilder:rbac:groups=demo.rtfm.co.ua,resources=myapps,verbs=get;list;watch
// +kubebuilder:rbac:groups=demo.rtfm.co.ua,resources=myapps/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list;watch;create;delete

// Reconcile creates the MyApp's Pod when there is none, replaces one that no longer matches the
// MyApp (deletes it; its deletion event brings the MyApp back) and updates the status.
func (r *MyAppReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	myApp := &demov1.MyApp{}
	if err := r.Get(ctx, req.NamespacedName, myApp); err != nil {
		// deleted: the garbage collector removes the Pod (its ownerReference)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if myApp.Spec.Image == "" {
		// a permanent error in the original: reported on the MyApp, not retried
		return ctrl.Result{}, r.updateStatus(ctx, myApp, "", metav1.ConditionFalse, "InvalidSpec", "Field 'spec.image' must be provided.")
	}
	desired, err := r.podForMyApp(myApp)
	if err != nil {
		return ctrl.Result{}, err
	}
	found := &corev1.Pod{}
	err = r.Get(ctx, types.NamespacedName{Name: desired.Name, Namespace: desired.Namespace}, found)
	switch {
	case apierrors.IsNotFound(err):
		log.Info("Creating a new Pod", "Pod.Namespace", desired.Namespace, "Pod.Name", desired.Name)
		if err := r.Create(ctx, desired); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("create pod %s: %w", desired.Name, err)
		}
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get pod %s: %w", desired.Name, err)
	case found.DeletionTimestamp != nil:
		return ctrl.Result{}, nil // its deletion event brings the MyApp back
	case !podMatches(found, desired):
		// a Pod's spec is immutable: it is replaced, deleted first
		log.Info("Replacing the Pod", "Pod.Namespace", found.Namespace, "Pod.Name", found.Name)
		return ctrl.Result{}, r.deletePod(ctx, found)
	}
	return ctrl.Result{}, r.updateStatus(ctx, myApp, desired.Name, metav1.ConditionTrue, "PodCreated",
		fmt.Sprintf("Pod %s for custom resource %s created", desired.Name, myApp.Name))
}

// deletePod deletes the Pod it was given (its UID as precondition); gone already, or another Pod
// by now, is no error: the Pod watch brings the MyApp back.
func (r *MyAppReconciler) deletePod(ctx context.Context, pod *corev1.Pod) error {
	err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s: %w", pod.Name, err)
	}
	return nil
}

// updateStatus sets status.podName and the Available condition, and updates the status when
// they changed.
func (r *MyAppReconciler) updateStatus(ctx context.Context, myApp *demov1.MyApp, podName string, status metav1.ConditionStatus, reason, message string) error {
	changed := meta.SetStatusCondition(&myApp.Status.Conditions, metav1.Condition{
		Type: typeAvailableMyApp, Status: status, Reason: reason, Message: message, ObservedGeneration: myApp.Generation,
	})
	if !changed && myApp.Status.PodName == podName {
		return nil
	}
	myApp.Status.PodName = podName
	if err := r.Status().Update(ctx, myApp); err != nil {
		return fmt.Errorf("update the MyApp status: %w", err)
	}
	return nil
}

// podForMyApp returns the MyApp's Pod, owned by it.
func (r *MyAppReconciler) podForMyApp(myApp *demov1.MyApp) (*corev1.Pod, error) {
	container := corev1.Container{
		Name:    myApp.Name,
		Image:   myApp.Spec.Image,
		Command: []string{"/bin/sh", "-c", bannerCommand},
		Ports:   []corev1.ContainerPort{{ContainerPort: 80}},
	}
	if myApp.Spec.Banner != "" {
		container.Env = []corev1.EnvVar{{Name: "BANNER", Value: myApp.Spec.Banner}}
	}
	labels := r.Relabeler.Labels()
	labels["app"] = myApp.Name
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: myApp.Name + "-pod", Namespace: myApp.Namespace, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container}},
	}
	if err := ctrl.SetControllerReference(myApp, pod, r.Scheme); err != nil {
		return nil, fmt.Errorf("set the Pod's owner: %w", err)
	}
	return pod, nil
}

// podMatches says whether the Pod found is the desired one: its labels, image and banner.
func podMatches(found, desired *corev1.Pod) bool {
	if !relabel.HasLabels(found.Labels, desired.Labels) || len(found.Spec.Containers) != 1 {
		return false
	}
	have, want := found.Spec.Containers[0], desired.Spec.Containers[0]
	return have.Image == want.Image && envOf(have) == envOf(want)
}

// envOf is a container's environment, printed (fmt prints a map sorted by key).
func envOf(c corev1.Container) string {
	env := make(map[string]string, len(c.Env))
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	return fmt.Sprint(env)
}

// SetupWithManager sets up the controller with the Manager.
func (r *MyAppReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&demov1.MyApp{}).
		Owns(&corev1.Pod{}).
		WatchesRawSource(r.Relabeler.Source(mgr.GetClient(), func() client.ObjectList { return &demov1.MyAppList{} })).
		Named("myapp").
		Complete(r)
}
