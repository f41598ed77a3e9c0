package decide

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/render"
)

// builtinImmutable lists, by kind, the fields of built-in kinds that the API server refuses to
// change on an update (Invalid: "field is immutable"), as the validation of each kind in
// k8s.io/kubernetes decides them:
//   - Deployment, ReplicaSet, DaemonSet: spec.selector (pkg/apis/apps/validation, ValidateDeploymentUpdate and its kin);
//   - StatefulSet: every spec field but replicas, ordinals, template, updateStrategy,
//     revisionHistoryLimit, persistentVolumeClaimRetentionPolicy and minReadySeconds
//     (ValidateStatefulSetUpdate);
//   - Job: spec.selector, spec.template (but for a Job suspended that never started, the
//     template's scheduling directives: schedulingDirectives), completionMode, podFailurePolicy,
//     successPolicy, backoffLimitPerIndex and managedBy (pkg/apis/batch/validation,
//     ValidateJobSpecUpdate);
//   - Pod: its spec but its containers' images, activeDeadlineSeconds, tolerations,
//     terminationGracePeriodSeconds and schedulingGates (podMutable; ValidatePodUpdate);
//   - Service: spec.clusterIP once set (pkg/apis/core/validation, ValidateServiceUpdate);
//   - PersistentVolumeClaim: its spec but resources.requests and volumeAttributesClassName
//     (ValidatePersistentVolumeClaimUpdate);
//   - RoleBinding, ClusterRoleBinding: roleRef (pkg/apis/rbac/validation);
//   - StorageClass: provisioner, parameters, reclaimPolicy, volumeBindingMode (pkg/apis/storage/validation).
//
// Only a field both the policy and the observed child set is compared, and only with what the
// child holds of it (defaults the API server added are no change).
var builtinImmutable = map[schema.GroupKind][]string{
	{Group: "apps", Kind: "Deployment"}:                              {"spec.selector"},
	{Group: "apps", Kind: "ReplicaSet"}:                              {"spec.selector"},
	{Group: "apps", Kind: "DaemonSet"}:                               {"spec.selector"},
	{Group: "apps", Kind: "StatefulSet"}:                             {"spec.selector", "spec.serviceName", "spec.volumeClaimTemplates", "spec.podManagementPolicy"},
	{Group: "batch", Kind: "Job"}:                                    {"spec.selector", "spec.template", "spec.completionMode", "spec.podFailurePolicy", "spec.successPolicy", "spec.backoffLimitPerIndex", "spec.managedBy"},
	{Kind: "Service"}:                                                {"spec.clusterIP"},
	{Kind: "Pod"}:                                                    {"spec"},
	{Kind: "PersistentVolumeClaim"}:                                  {"spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeMode", "spec.dataSource", "spec.dataSourceRef"},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        {"roleRef"},
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: {"roleRef"},
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                  {"provisioner", "parameters", "reclaimPolicy", "volumeBindingMode"},
}

// immutableWhenImmutable are the fields of a ConfigMap or Secret that `immutable: true` freezes.
var immutableWhenImmutable = []string{"data", "binaryData"}

// immutableFields returns the fields of the child's kind that no update may change (what it reads of
// the observed child, the caches keep: policy.runtimeReads): the built-in
// table's, a frozen ConfigMap's or Secret's data, and for a custom resource the fields whose
// x-kubernetes-validations hold the rule `self == oldSelf`.
func immutableFields(child *render.Child, obs *unstructured.Unstructured) []string {
	gk := child.Object.GroupVersionKind().GroupKind()
	fields := builtinImmutable[gk]
	if gk.Group == "" && (gk.Kind == "ConfigMap" || gk.Kind == "Secret") {
		if frozen, _, _ := unstructured.NestedBool(obs.Object, "immutable"); frozen {
			fields = append(fields[:len(fields):len(fields)], immutableWhenImmutable...)
		}
	}
	if child.Resource.Schema != nil {
		fields = append(fields[:len(fields):len(fields)], crdImmutable(child.Resource.Schema, "")...)
	}
	return fields
}

// crdImmutable returns the paths, below prefix, of the properties of a CRD's schema that declare
// themselves immutable (a rule self == oldSelf). Lists' items are not walked: their paths have no
// fixed name.
func crdImmutable(s *apiextensionsv1.JSONSchemaProps, prefix string) []string {
	var out []string
	for name, p := range s.Properties {
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		if prefix == "" && (name == "metadata" || name == "status") {
			continue
		}
		for _, r := range p.XValidations {
			if rule := strings.Join(strings.Fields(r.Rule), ""); rule == "self==oldSelf" || rule == "oldSelf==self" {
				out = append(out, path)
				break
			}
		}
		out = append(out, crdImmutable(&p, path)...)
	}
	return out
}

// immutableChange returns the first field, in the order of immutableFields, that the child sets
// to another value than obs holds and that its kind does not let change; "" when none.
func immutableChange(child *render.Child, obs *unstructured.Unstructured) string {
	fields := immutableFields(child, obs)
	if len(fields) == 0 {
		return ""
	}
	for _, f := range fields {
		path := strings.Split(f, ".")
		v, found, err := unstructured.NestedFieldNoCopy(child.Object.Object, path...)
		if !found || err != nil || v == nil {
			continue
		}
		if held, ok, _ := unstructured.NestedFieldNoCopy(obs.Object, path...); !ok || held == nil {
			continue // not set yet (or an observed child written by hand without it): setting it is no change
		}
		only := &unstructured.Unstructured{Object: map[string]any{"apiVersion": child.Object.GetAPIVersion(), "kind": child.Object.GetKind()}}
		if err := unstructured.SetNestedField(only.Object, runtime.DeepCopyJSONValue(v), path...); err != nil {
			continue
		}
		if f == "spec.template" && schedulable(child.Object.GroupVersionKind().GroupKind(), obs) {
			withoutSchedulingDirectives(only.Object)
		}
		if f == "spec" && child.Object.GroupVersionKind().GroupKind() == (schema.GroupKind{Kind: "Pod"}) {
			withoutPodMutable(only.Object, obs)
		}
		if contentNeedsApply(child, only, obs, false) { // only has no metadata: all of it is content
			return f
		}
	}
	return ""
}

// schedulable reports whether obs is a Job whose template's scheduling directives may still
// change: suspended, and never started (the API server's jobStrategy: suspend true and no
// status.startTime; policy.runtimeReads keeps both).
func schedulable(gk schema.GroupKind, obs *unstructured.Unstructured) bool {
	if gk != (schema.GroupKind{Group: "batch", Kind: "Job"}) {
		return false
	}
	suspended, _, _ := unstructured.NestedBool(obs.Object, "spec", "suspend")
	_, started, _ := unstructured.NestedFieldNoCopy(obs.Object, "status", "startTime")
	return suspended && !started
}

// schedulingDirectives are the fields of a Job's template that may change while it is suspended
// and never started (validatePodTemplateUpdate in pkg/apis/batch/validation).
var schedulingDirectives = [][]string{
	{"spec", "template", "metadata", "labels"},
	{"spec", "template", "metadata", "annotations"},
	{"spec", "template", "spec", "nodeSelector"},
	{"spec", "template", "spec", "tolerations"},
	{"spec", "template", "spec", "schedulingGates"},
	{"spec", "template", "spec", "affinity", "nodeAffinity"},
}

// withoutSchedulingDirectives removes a Job's scheduling directives from obj, so that they are not
// compared.
func withoutSchedulingDirectives(obj map[string]any) {
	for _, path := range schedulingDirectives {
		unstructured.RemoveNestedField(obj, path...)
	}
}

// podMutable are the fields of a Pod's spec an update may change (ValidatePodUpdate: images,
// activeDeadlineSeconds, tolerations added, terminationGracePeriodSeconds, scheduling gates
// removed); the rest of its spec is compared as immutable.
var podMutable = []string{"activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates"}

// withoutPodMutable removes from a Pod the fields of its spec an update may change, so that
// they are not compared; of a Pod held by scheduling gates (obs, as it is), what it may add to
// its node selection: nodeSelector keys (none changed or removed), a node affinity it has none of.
func withoutPodMutable(obj map[string]any, obs *unstructured.Unstructured) {
	spec, _ := obj["spec"].(map[string]any)
	for _, f := range podMutable {
		delete(spec, f)
	}
	if gated(obs) {
		held, _, _ := unstructured.NestedStringMap(obs.Object, "spec", "nodeSelector")
		if wanted, _, _ := unstructured.NestedStringMap(obj, "spec", "nodeSelector"); addsOnly(held, wanted) {
			delete(spec, "nodeSelector")
		}
		if _, has, _ := unstructured.NestedFieldNoCopy(obs.Object, "spec", "affinity", "nodeAffinity"); !has {
			unstructured.RemoveNestedField(spec, "affinity", "nodeAffinity")
		}
	}
	for _, list := range []string{"containers", "initContainers"} {
		items, _ := spec[list].([]any)
		for _, c := range items {
			if c, ok := c.(map[string]any); ok {
				delete(c, "image")
			}
		}
	}
}

// addsOnly reports whether wanted holds every key of held, with its value.
func addsOnly(held, wanted map[string]string) bool {
	for k, v := range held {
		if w, ok := wanted[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// gated reports whether the observed Pod waits on scheduling gates: until it is scheduled, its
// node selection may change (ValidatePodUpdate).
func gated(obs *unstructured.Unstructured) bool {
	gates, _, _ := unstructured.NestedSlice(obs.Object, "spec", "schedulingGates")
	return len(gates) > 0
}

// immutableMessage says that the update of a child would change a field its kind does not let
// change, and what to do instead.
func immutableMessage(child *render.Child, field string) string {
	r := child.Resource
	return fmt.Sprintf("%s %s: the policy changes %s, which the API server does not let change on an existing %s (it would refuse the update as Invalid: field is immutable): "+
		"set updateStrategy {method: Recreate} on %s %s in spec.childResources, or give the child a name that changes with %s",
		child.Object.GetKind(), render.NamespacedName(child.Object), field, child.Object.GetKind(), r.GVR.GroupVersion().String(), r.GVR.Resource, field)
}
