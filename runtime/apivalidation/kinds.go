package apivalidation

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/api/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	"k8s.io/kubernetes/pkg/apis/batch"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/apis/networking"
	networkingvalidation "k8s.io/kubernetes/pkg/apis/networking/validation"
	"k8s.io/kubernetes/pkg/apis/policy"
	policyvalidation "k8s.io/kubernetes/pkg/apis/policy/validation"
	"k8s.io/kubernetes/pkg/apis/rbac"
	rbacvalidation "k8s.io/kubernetes/pkg/apis/rbac/validation"
	"k8s.io/kubernetes/pkg/features"
)

// kind is what the API server does with a new object of one kind before it stores it: its
// registry strategy's PrepareForCreate (prepare, nil when it changes nothing validation reads) and
// Validate (validate), each calling the validation package of the kind's API group with the
// options the strategy gives it. The strategies themselves (k8s.io/kubernetes/pkg/registry) are
// not imported: they bring the API server's storage with them (see doc.go).
type kind struct {
	namespaced bool
	prepare    func(obj runtime.Object)
	validate   func(obj runtime.Object) field.ErrorList
}

const (
	appsGroup        = "apps"
	batchGroup       = "batch"
	networkingGroup  = "networking.k8s.io"
	policyGroup      = "policy"
	autoscalingGroup = "autoscaling"
	rbacGroup        = "rbac.authorization.k8s.io"
)

// builtinKinds are the kinds Validate knows, by group and kind, each as its strategy in
// k8s.io/kubernetes/pkg/registry/<group>/<resource>/strategy.go validates a create.
var builtinKinds = map[schema.GroupKind]kind{
	{Kind: "Pod"}:                   {namespaced: true, prepare: preparePod, validate: validatePod},
	{Kind: "Service"}:               {namespaced: true, prepare: prepareService, validate: validateService},
	{Kind: "ConfigMap"}:             {namespaced: true, validate: validateConfigMap},
	{Kind: "Secret"}:                {namespaced: true, validate: validateSecret},
	{Kind: "PersistentVolumeClaim"}: {namespaced: true, prepare: preparePVC, validate: validatePVC},
	{Kind: "ServiceAccount"}:        {namespaced: true, validate: validateServiceAccount},
	{Kind: "ResourceQuota"}:         {namespaced: true, validate: validateResourceQuota},
	{Kind: "LimitRange"}:            {namespaced: true, validate: validateLimitRange},
	{Kind: "Namespace"}:             {prepare: prepareNamespace, validate: validateNamespace},

	{Group: appsGroup, Kind: "Deployment"}:  {namespaced: true, prepare: prepareDeployment, validate: validateDeployment},
	{Group: appsGroup, Kind: "StatefulSet"}: {namespaced: true, prepare: prepareStatefulSet, validate: validateStatefulSet},
	{Group: appsGroup, Kind: "DaemonSet"}:   {namespaced: true, prepare: prepareDaemonSet, validate: validateDaemonSet},
	{Group: appsGroup, Kind: "ReplicaSet"}:  {namespaced: true, prepare: prepareReplicaSet, validate: validateReplicaSet},

	{Group: batchGroup, Kind: "Job"}:     {namespaced: true, prepare: prepareJob, validate: validateJob},
	{Group: batchGroup, Kind: "CronJob"}: {namespaced: true, prepare: prepareCronJob, validate: validateCronJob},

	{Group: networkingGroup, Kind: "Ingress"}:       {namespaced: true, validate: validateIngress},
	{Group: networkingGroup, Kind: "NetworkPolicy"}: {namespaced: true, validate: validateNetworkPolicy},

	{Group: policyGroup, Kind: "PodDisruptionBudget"}:          {namespaced: true, validate: validatePDB},
	{Group: autoscalingGroup, Kind: "HorizontalPodAutoscaler"}: {namespaced: true, validate: validateHPA},

	{Group: rbacGroup, Kind: "Role"}:               {namespaced: true, validate: validateRole},
	{Group: rbacGroup, Kind: "ClusterRole"}:        {validate: validateClusterRole},
	{Group: rbacGroup, Kind: "RoleBinding"}:        {namespaced: true, validate: validateRoleBinding},
	{Group: rbacGroup, Kind: "ClusterRoleBinding"}: {validate: validateClusterRoleBinding},
}

// core: pkg/registry/core/*/strategy.go

func preparePod(obj runtime.Object) { pod.DropDisabledPodFields(obj.(*core.Pod), nil) }

func validatePod(obj runtime.Object) field.ErrorList {
	p := obj.(*core.Pod)
	opts := pod.GetValidationOptionsFromPodSpecAndMeta(&p.Spec, nil, &p.ObjectMeta, nil)
	opts.ResourceIsPod = true
	return corevalidation.ValidatePodCreate(p, opts)
}

// prepareService fills clusterIPs from clusterIP, as the Service storage's beginCreate does before
// it validates (normalizeClusterIPs, pkg/registry/core/service/storage); the addresses it then
// allocates are the cluster's to know.
func prepareService(obj runtime.Object) {
	svc := obj.(*core.Service)
	if svc.Spec.ClusterIP != "" && len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
}

func validateService(obj runtime.Object) field.ErrorList {
	return corevalidation.ValidateServiceCreate(obj.(*core.Service))
}

func validateConfigMap(obj runtime.Object) field.ErrorList {
	return corevalidation.ValidateConfigMap(obj.(*core.ConfigMap))
}

func validateSecret(obj runtime.Object) field.ErrorList {
	return corevalidation.ValidateSecret(obj.(*core.Secret))
}

func preparePVC(obj runtime.Object) {
	persistentvolumeclaim.DropDisabledFields(&obj.(*core.PersistentVolumeClaim).Spec, nil)
}

func validatePVC(obj runtime.Object) field.ErrorList {
	pvc := obj.(*core.PersistentVolumeClaim)
	return corevalidation.ValidatePersistentVolumeClaim(pvc, corevalidation.ValidationOptionsForPersistentVolumeClaim(pvc, nil))
}

func validateServiceAccount(obj runtime.Object) field.ErrorList {
	return corevalidation.ValidateServiceAccount(obj.(*core.ServiceAccount))
}

func validateResourceQuota(obj runtime.Object) field.ErrorList {
	return corevalidation.ValidateResourceQuota(obj.(*core.ResourceQuota))
}

func validateLimitRange(obj runtime.Object) field.ErrorList {
	return corevalidation.ValidateLimitRange(obj.(*core.LimitRange))
}

// prepareNamespace adds the kubernetes finalizer, which a new namespace always gets.
func prepareNamespace(obj runtime.Object) {
	ns := obj.(*core.Namespace)
	for _, f := range ns.Spec.Finalizers {
		if f == core.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, core.FinalizerKubernetes)
}

func validateNamespace(obj runtime.Object) field.ErrorList {
	return corevalidation.ValidateNamespace(obj.(*core.Namespace))
}

// apps: pkg/registry/apps/*/strategy.go

func prepareDeployment(obj runtime.Object) {
	pod.DropDisabledTemplateFields(&obj.(*apps.Deployment).Spec.Template, nil)
}

func validateDeployment(obj runtime.Object) field.ErrorList {
	d := obj.(*apps.Deployment)
	return appsvalidation.ValidateDeployment(d, pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, nil))
}

func prepareStatefulSet(obj runtime.Object) {
	pod.DropDisabledTemplateFields(&obj.(*apps.StatefulSet).Spec.Template, nil)
}

func validateStatefulSet(obj runtime.Object) field.ErrorList {
	s := obj.(*apps.StatefulSet)
	return appsvalidation.ValidateStatefulSet(s, pod.GetValidationOptionsFromPodTemplate(&s.Spec.Template, nil))
}

func prepareDaemonSet(obj runtime.Object) {
	pod.DropDisabledTemplateFields(&obj.(*apps.DaemonSet).Spec.Template, nil)
}

func validateDaemonSet(obj runtime.Object) field.ErrorList {
	d := obj.(*apps.DaemonSet)
	return appsvalidation.ValidateDaemonSet(d, pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, nil))
}

func prepareReplicaSet(obj runtime.Object) {
	pod.DropDisabledTemplateFields(&obj.(*apps.ReplicaSet).Spec.Template, nil)
}

func validateReplicaSet(obj runtime.Object) field.ErrorList {
	rs := obj.(*apps.ReplicaSet)
	return appsvalidation.ValidateReplicaSet(rs, pod.GetValidationOptionsFromPodTemplate(&rs.Spec.Template, nil))
}

// batch: pkg/registry/batch/{job,cronjob}/strategy.go

// prepareJob gives a Job without a manual selector the selector and template labels the API
// server generates for it (generateSelector), which its validation then requires.
func prepareJob(obj runtime.Object) {
	job := obj.(*batch.Job)
	pod.DropDisabledTemplateFields(&job.Spec.Template, nil)
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector {
		return
	}
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	for _, k := range []string{batch.LegacyJobNameLabel, batch.JobNameLabel} {
		if _, ok := job.Spec.Template.Labels[k]; !ok {
			job.Spec.Template.Labels[k] = job.Name
		}
	}
	for _, k := range []string{batch.LegacyControllerUidLabel, batch.ControllerUidLabel} {
		if _, ok := job.Spec.Template.Labels[k]; !ok {
			job.Spec.Template.Labels[k] = string(job.UID)
		}
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{}
	}
	if job.Spec.Selector.MatchLabels == nil {
		job.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := job.Spec.Selector.MatchLabels[batch.ControllerUidLabel]; !ok {
		job.Spec.Selector.MatchLabels[batch.ControllerUidLabel] = string(job.UID)
	}
}

func validateJob(obj runtime.Object) field.ErrorList {
	job := obj.(*batch.Job)
	return batchvalidation.ValidateJob(job, batchvalidation.JobValidationOptions{
		PodValidationOptions:  pod.GetValidationOptionsFromPodTemplate(&job.Spec.Template, nil),
		RequirePrefixedLabels: true,
	})
}

func prepareCronJob(obj runtime.Object) {
	pod.DropDisabledTemplateFields(&obj.(*batch.CronJob).Spec.JobTemplate.Spec.Template, nil)
}

func validateCronJob(obj runtime.Object) field.ErrorList {
	c := obj.(*batch.CronJob)
	return batchvalidation.ValidateCronJobCreate(c, pod.GetValidationOptionsFromPodTemplate(&c.Spec.JobTemplate.Spec.Template, nil))
}

// networking: pkg/registry/networking/{ingress,networkpolicy}/strategy.go

func validateIngress(obj runtime.Object) field.ErrorList {
	return networkingvalidation.ValidateIngressCreate(obj.(*networking.Ingress))
}

func validateNetworkPolicy(obj runtime.Object) field.ErrorList {
	np := obj.(*networking.NetworkPolicy)
	return networkingvalidation.ValidateNetworkPolicy(np, networkingvalidation.ValidationOptionsForNetworking(np, nil))
}

// policy: pkg/registry/policy/poddisruptionbudget/strategy.go

func validatePDB(obj runtime.Object) field.ErrorList {
	return policyvalidation.ValidatePodDisruptionBudget(obj.(*policy.PodDisruptionBudget), policyvalidation.PodDisruptionBudgetValidationOptions{})
}

// autoscaling: pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go,
// validationOptionsForHorizontalPodAutoscaler for a create

func validateHPA(obj runtime.Object) field.ErrorList {
	hpa := obj.(*autoscaling.HorizontalPodAutoscaler)
	opts := autoscalingvalidation.HorizontalPodAutoscalerSpecValidationOptions{
		MinReplicasLowerBound:           1,
		ScaleTargetRefValidationOptions: autoscalingvalidation.CrossVersionObjectReferenceValidationOptions{},
		ObjectMetricsValidationOptions:  autoscalingvalidation.CrossVersionObjectReferenceValidationOptions{AllowEmptyAPIGroup: true},
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.HPAScaleToZero) {
		opts.MinReplicasLowerBound = 0
	}
	if hpa.Spec.ScaleTargetRef.Kind == "ReplicationController" {
		opts.ScaleTargetRefValidationOptions.AllowEmptyAPIGroup = true
	}
	return autoscalingvalidation.ValidateHorizontalPodAutoscaler(hpa, opts)
}

// rbac: pkg/registry/rbac/*/strategy.go

func validateRole(obj runtime.Object) field.ErrorList {
	return rbacvalidation.ValidateRole(obj.(*rbac.Role))
}

func validateClusterRole(obj runtime.Object) field.ErrorList {
	return rbacvalidation.ValidateClusterRole(obj.(*rbac.ClusterRole), rbacvalidation.ClusterRoleValidationOptions{})
}

func validateRoleBinding(obj runtime.Object) field.ErrorList {
	return rbacvalidation.ValidateRoleBinding(obj.(*rbac.RoleBinding))
}

func validateClusterRoleBinding(obj runtime.Object) field.ErrorList {
	return rbacvalidation.ValidateClusterRoleBinding(obj.(*rbac.ClusterRoleBinding))
}
