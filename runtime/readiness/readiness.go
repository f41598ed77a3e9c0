package readiness

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"metacel.dev/metacel/runtime/contract"
)

// Verdict is an object's readiness as its kind judges it.
type Verdict struct {
	Ready bool
	// Failed: the object says it will not become ready without a change.
	Failed bool
	// Reason is one CamelCase word: the object's own reason where it gives one.
	Reason string
	// Message says why the object is not ready, or what makes it ready.
	Message string
}

// Kind is what the judge knows of an object's kind beyond the object.
type Kind struct {
	// ReportsConditions: the kind's schema declares status.conditions, so an object of it
	// with none has not been looked at by its controller yet.
	ReportsConditions bool
}

// Of judges obj: metacel's rules where kstatus misjudges the kind, else kstatus's verdict, then
// metacel's rules on top of it (doc.go).
func Of(obj *unstructured.Unstructured, kind Kind) Verdict {
	for _, rule := range insteadOfKstatus {
		if v, ok := rule(obj); ok {
			return v
		}
	}
	res, err := kstatus.Compute(obj)
	if err != nil {
		return Verdict{Reason: "StatusUnreadable", Message: fmt.Sprintf("its status cannot be read: %v", err)}
	}
	if res.Status != kstatus.CurrentStatus {
		return notCurrent(obj, res)
	}
	for _, rule := range onTopOfKstatus {
		if v, ok := rule(obj); ok {
			return v
		}
	}
	if kind.ReportsConditions && !hasConditions(obj) {
		return Verdict{Reason: "NoConditions", Message: "its controller has reported no conditions yet"}
	}
	return Verdict{Ready: true, Reason: "Current", Message: res.Message}
}

// A rule judges the objects of the kinds it knows (ok), and says nothing of others.
type rule func(obj *unstructured.Unstructured) (v Verdict, ok bool)

// insteadOfKstatus are the rules for states kstatus misjudges: a paused Deployment (never
// Current), a DaemonSet updated OnDelete (never Current after a template change), a Job that
// has failed while its Pods terminate (in progress).
var insteadOfKstatus = []rule{pausedDeployment, onDeleteDaemonSet, jobFailing}

// onTopOfKstatus are the rules for objects kstatus calls Current that are not ready yet.
var onTopOfKstatus = []rule{jobNotComplete, podFailed, onDeleteStatefulSetNotReady, statefulSetLessAvailable, loadBalancerPending, conditionNotTrue, conditionBehind}

// notCurrent turns a kstatus verdict other than Current into a Verdict. A Pod kstatus calls failed
// while it has not (its containers crash-looping, or not scheduled yet: both recover, by a
// restart or a new node) is not ready; a nested metacel parent whose child failed has failed.
func notCurrent(obj *unstructured.Unstructured, res *kstatus.Result) Verdict {
	v := Verdict{Failed: res.Status == kstatus.FailedStatus, Reason: string(res.Status), Message: res.Message}
	for _, c := range res.Conditions {
		if c.Reason != "" {
			v.Reason = c.Reason
		}
		if c.Message != "" {
			v.Message = c.Message
		}
	}
	if c, ok := findCondition(obj, "Failed"); ok && v.Failed && isJob(obj) && c.status == "True" {
		v.Reason, v.Message = orDefault(c.reason, v.Reason), orDefault(c.message, v.Message)
	}
	if isPod(obj) && v.Failed {
		v = podRecoverable(obj, v)
	}
	if c, ok := findCondition(obj, "Suspended"); ok && isJob(obj) && c.status == "True" {
		v.Reason, v.Message = orDefault(c.reason, "JobSuspended"), "the Job is suspended (spec.suspend)"
	}
	if c, ok := findCondition(obj, "Ready"); ok && c.status == "False" && c.reason == contract.ReasonChildFailed &&
		(c.observedGeneration == 0 || c.observedGeneration == obj.GetGeneration()) {
		v.Failed, v.Reason, v.Message = true, c.reason, orDefault(c.message, v.Message)
	}
	if res.Status == kstatus.TerminatingStatus {
		v.Reason = "Terminating"
	}
	return v
}

// jobNotComplete is metacel's Job rule: a Job is ready once it has completed.
func jobNotComplete(obj *unstructured.Unstructured) (Verdict, bool) {
	if !isJob(obj) {
		return Verdict{}, false
	}
	for _, t := range []string{"Complete", "SuccessCriteriaMet"} {
		if c, ok := findCondition(obj, t); ok && c.status == "True" {
			return Verdict{}, false
		}
	}
	active, _, _ := unstructured.NestedInt64(obj.Object, "status", "active")
	succeeded, _, _ := unstructured.NestedInt64(obj.Object, "status", "succeeded")
	return Verdict{Reason: "JobRunning", Message: fmt.Sprintf("the Job has not completed (active %d, succeeded %d)", active, succeeded)}, true
}

// podFailed is metacel's Pod rule: a Pod whose containers ended in failure (phase Failed) has
// failed; kstatus calls it Current, as it does a Pod that succeeded (which is ready).
func podFailed(obj *unstructured.Unstructured) (Verdict, bool) {
	gvk := obj.GroupVersionKind()
	if gvk.Group != "" || gvk.Kind != "Pod" {
		return Verdict{}, false
	}
	if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase != "Failed" {
		return Verdict{}, false
	}
	reason, _, _ := unstructured.NestedString(obj.Object, "status", "reason")
	message, _, _ := unstructured.NestedString(obj.Object, "status", "message")
	return Verdict{Failed: true, Reason: orDefault(reason, "PodFailed"), Message: orDefault(message, "the Pod has completed, but not successfully")}, true
}

// onDeleteStatefulSetNotReady is metacel's rule for a StatefulSet whose updateStrategy is
// OnDelete, which kstatus calls Current as soon as it exists (kubectl rollout status does not judge
// one): it is ready once its controller has observed its generation and every replica is ready and
// available. Its Pods are replaced only when deleted, so updated replicas are not asked for.
func onDeleteStatefulSetNotReady(obj *unstructured.Unstructured) (Verdict, bool) {
	gvk := obj.GroupVersionKind()
	if gvk.Group != "apps" || gvk.Kind != "StatefulSet" {
		return Verdict{}, false
	}
	if strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "updateStrategy", "type"); strategy != "OnDelete" {
		return Verdict{}, false
	}
	if observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); observed < obj.GetGeneration() {
		return Verdict{Reason: "LatestGenerationNotObserved", Message: fmt.Sprintf("its controller has not observed generation %d yet", obj.GetGeneration())}, true
	}
	replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		replicas = 1 // the API server's default
	}
	for _, count := range []struct{ field, reason, name string }{{"readyReplicas", "LessReady", "Ready"}, {"availableReplicas", "LessAvailable", "Available"}} {
		n, found, _ := unstructured.NestedInt64(obj.Object, "status", count.field)
		if (found || count.field == "readyReplicas") && n < replicas {
			return Verdict{Reason: count.reason, Message: fmt.Sprintf("%s: %d/%d", count.name, n, replicas)}, true
		}
	}
	if n, _, _ := unstructured.NestedInt64(obj.Object, "status", "replicas"); n > replicas {
		return Verdict{Reason: "ExtraPods", Message: fmt.Sprintf("Pending termination: %d", n-replicas)}, true
	}
	return Verdict{}, false
}

// loadBalancerPending is metacel's rule for a Service of type LoadBalancer, which kstatus calls
// Current once it has a cluster IP: it is ready once its load balancer has an address.
func loadBalancerPending(obj *unstructured.Unstructured) (Verdict, bool) {
	gvk := obj.GroupVersionKind()
	if gvk.Group != "" || gvk.Kind != "Service" {
		return Verdict{}, false
	}
	if typ, _, _ := unstructured.NestedString(obj.Object, "spec", "type"); typ != "LoadBalancer" {
		return Verdict{}, false
	}
	if ingress, _, _ := unstructured.NestedSlice(obj.Object, "status", "loadBalancer", "ingress"); len(ingress) > 0 {
		return Verdict{}, false
	}
	return Verdict{Reason: "LoadBalancerPending", Message: "its load balancer has no address yet (status.loadBalancer.ingress)"}, true
}

func isJob(obj *unstructured.Unstructured) bool { return isKind(obj, "batch", "Job") }

func isPod(obj *unstructured.Unstructured) bool { return isKind(obj, "", "Pod") }

func isKind(obj *unstructured.Unstructured, group, kind string) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == group && gvk.Kind == kind
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
