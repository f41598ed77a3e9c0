// Package controller holds the Memcached reconciler, as the Operator SDK tutorial (and Kubebuilder's
// getting-started, the same code) writes it: the Deployment created when missing, its size kept,
// the status conditions set with meta.SetStatusCondition; the conditions are the seed's
// (Available, Progressing and Degraded, computed from the Deployment's status).
package controller

import (
	"context"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"metacel.dev/metacel/test/bench/frameworks/internal/relabel"
	cachev1alpha1 "metacel.dev/metacel/test/bench/frameworks/memcached/api/v1alpha1"
)

// The Memcached's condition types.
const (
	typeAvailableMemcached   = "Available"
	typeProgressingMemcached = "Progressing"
	typeDegradedMemcached    = "Degraded"
)

// MemcachedReconciler reconciles a Memcached object.
type MemcachedReconciler struct {
	client.Client
	Scheme *runtime.Scheme
	// Relabeler holds the labels every Deployment carries beside its own (the benchmark's policy
	// change)
	Relabeler *relabel.Relabeler
}

// +kubebuilder:rbac:groups=cache.example.com,resources=memcacheds,verbs=get;list;watch
// +kubebuilder:rbac:groups=cache.example.com,resources=memcacheds/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update

// Reconcile creates the Memcached's Deployment when there is none, keeps its size (and the
// benchmark's labels) and updates the status conditions from the Deployment's status.
func (r *MemcachedReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)
	memcached := &cachev1alpha1.Memcached{}
	if err := r.Get(ctx, req.NamespacedName, memcached); err != nil {
		if apierrors.IsNotFound(err) {
			log.Info("memcached resource not found. Ignoring since object must be deleted")
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get the Memcached: %w", err)
	}
	found := &appsv1.Deployment{}
	err := r.Get(ctx, types.NamespacedName{Name: memcached.Name, Namespace: memcached.Namespace}, found)
	switch {
	case apierrors.IsNotFound(err):
		if found, err = r.createDeployment(ctx, memcached); err != nil {
			return ctrl.Result{}, err
		}
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get the Deployment: %w", err)
	case r.deploymentOutdated(found, memcached):
		if err := r.updateDeployment(ctx, found, memcached); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, r.updateStatus(ctx, memcached, found)
}

// createDeployment creates the Memcached's Deployment and returns it.
func (r *MemcachedReconciler) createDeployment(ctx context.Context, memcached *cachev1alpha1.Memcached) (*appsv1.Deployment, error) {
	dep, err := r.deploymentForMemcached(memcached)
	if err != nil {
		return nil, err
	}
	logf.FromContext(ctx).Info("Creating a new Deployment", "Deployment.Namespace", dep.Namespace, "Deployment.Name", dep.Name)
	if err := r.Create(ctx, dep); err != nil {
		return nil, fmt.Errorf("create a new Deployment %s: %w", dep.Name, err)
	}
	return dep, nil
}

// deploymentOutdated says whether the Deployment's size or labels differ from what the Memcached
// wants.
func (r *MemcachedReconciler) deploymentOutdated(found *appsv1.Deployment, memcached *cachev1alpha1.Memcached) bool {
	return found.Spec.Replicas == nil || *found.Spec.Replicas != memcached.Spec.Size ||
		!relabel.HasLabels(found.Labels, r.Relabeler.Labels())
}

// updateDeployment sets the Deployment's size and labels and updates it in place.
func (r *MemcachedReconciler) updateDeployment(ctx context.Context, found *appsv1.Deployment, memcached *cachev1alpha1.Memcached) error {
	found.Spec.Replicas = ptr.To(memcached.Spec.Size)
	if found.Labels == nil {
		found.Labels = map[string]string{}
	}
	maps.Copy(found.Labels, r.Relabeler.Labels())
	logf.FromContext(ctx).Info("Updating the Deployment", "Deployment.Namespace", found.Namespace, "Deployment.Name", found.Name)
	if err := r.Update(ctx, found); err != nil {
		return fmt.Errorf("update the Deployment %s: %w", found.Name, err)
	}
	return nil
}

// updateStatus sets the conditions from the Deployment's status and updates the status when they
// changed.
func (r *MemcachedReconciler) updateStatus(ctx context.Context, memcached *cachev1alpha1.Memcached, dep *appsv1.Deployment) error {
	before := memcached.Status.DeepCopy()
	for _, c := range conditionsFor(memcached, dep) {
		meta.SetStatusCondition(&memcached.Status.Conditions, c)
	}
	if equality.Semantic.DeepEqual(before, &memcached.Status) {
		return nil
	}
	if err := r.Status().Update(ctx, memcached); err != nil {
		return fmt.Errorf("update the Memcached status: %w", err)
	}
	return nil
}

// conditionsFor are the Memcached's conditions given its Deployment: Available once the available
// replicas reach the size, Progressing while they do not and nothing failed, Degraded when the
// Deployment reports a failure.
func conditionsFor(memcached *cachev1alpha1.Memcached, dep *appsv1.Deployment) []metav1.Condition {
	size, available := memcached.Spec.Size, dep.Status.AvailableReplicas
	failure := deploymentFailure(dep)
	gen := memcached.Generation
	availableCond := metav1.Condition{Type: typeAvailableMemcached, Status: metav1.ConditionFalse, Reason: "ReplicasUnavailable",
		Message: fmt.Sprintf("%d of %d replicas available", available, size), ObservedGeneration: gen}
	progressing := metav1.Condition{Type: typeProgressingMemcached, Status: metav1.ConditionTrue, Reason: "RollingOut",
		Message: "waiting for replicas to become available", ObservedGeneration: gen}
	degraded := metav1.Condition{Type: typeDegradedMemcached, Status: metav1.ConditionFalse, Reason: "NoFailure",
		Message: "the Deployment reports no failure", ObservedGeneration: gen}
	switch {
	case available >= size:
		availableCond.Status, availableCond.Reason = metav1.ConditionTrue, "ReplicasAvailable"
		progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionFalse, "RolloutComplete", "all replicas are available"
	case failure != "":
		progressing.Status, progressing.Reason = metav1.ConditionFalse, "RolloutStalled"
	}
	if failure != "" {
		degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionTrue, "DeploymentFailed", failure
	}
	return []metav1.Condition{availableCond, progressing, degraded}
}

// deploymentFailure is the Deployment's failure (ReplicaFailure, or Progressing False), or "".
func deploymentFailure(dep *appsv1.Deployment) string {
	for _, c := range dep.Status.Conditions {
		if (c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue) ||
			(c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse) {
			return string(c.Type) + ": " + c.Message
		}
	}
	return ""
}

// deploymentForMemcached returns a Memcached Deployment object.
func (r *MemcachedReconciler) deploymentForMemcached(memcached *cachev1alpha1.Memcached) (*appsv1.Deployment, error) {
	ls := labelsForMemcached(memcached.Name)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: memcached.Name, Namespace: memcached.Namespace, Labels: r.Relabeler.Labels()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(memcached.Spec.Size),
			Selector: &metav1.LabelSelector{MatchLabels: ls},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: ls},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Image:           "memcached:1.4.36-alpine",
						Name:            "memcached",
						ImagePullPolicy: corev1.PullIfNotPresent,
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot:             ptr.To(true),
							RunAsUser:                ptr.To(int64(1001)),
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						Ports:   []corev1.ContainerPort{{ContainerPort: memcached.Spec.ContainerPort, Name: "memcached"}},
						Command: []string{"memcached", "-m=64", "-o", "modern", "-v"},
					}},
				},
			},
		},
	}
	// Set the ownerRef for the Deployment: deleting the Memcached deletes the Deployment
	if err := ctrl.SetControllerReference(memcached, dep, r.Scheme); err != nil {
		return nil, fmt.Errorf("set the Deployment's owner: %w", err)
	}
	return dep, nil
}

// labelsForMemcached returns the labels for selecting the resources of a Memcached.
func labelsForMemcached(name string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": name}
}

// SetupWithManager sets up the controller with the Manager. The Deployment is also watched
// so that its changes reconcile the Memcached.
func (r *MemcachedReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&cachev1alpha1.Memcached{}).
		Owns(&appsv1.Deployment{}).
		WatchesRawSource(r.Relabeler.Source(mgr.GetClient(), func() client.ObjectList { return &cachev1alpha1.MemcachedList{} })).
		Named("memcached").
		Complete(r)
}
