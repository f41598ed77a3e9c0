package readiness

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// pausedDeployment is metacel's rule for a paused Deployment, which kstatus never calls Current
// (its Progressing condition is Unknown, reason DeploymentPaused): kubectl rollout status's rule,
// rolled out once observed at its generation with every replica updated and available and no
// old one left.
func pausedDeployment(obj *unstructured.Unstructured) (Verdict, bool) {
	if !isKind(obj, "apps", "Deployment") {
		return Verdict{}, false
	}
	if c, ok := findCondition(obj, "Progressing"); !ok || c.reason != "DeploymentPaused" {
		return Verdict{}, false
	}
	if v, behind := notObserved(obj); behind {
		return v, true
	}
	replicas := specReplicas(obj)
	updated := statusInt(obj, "updatedReplicas")
	switch {
	case updated < replicas:
		return Verdict{Reason: "LessUpdated", Message: fmt.Sprintf("paused with %d of %d replicas updated", updated, replicas)}, true
	case statusInt(obj, "replicas") > updated:
		return Verdict{Reason: "ExtraPods", Message: fmt.Sprintf("paused with %d old replicas pending termination", statusInt(obj, "replicas")-updated)}, true
	case statusInt(obj, "availableReplicas") < updated:
		return Verdict{Reason: "LessAvailable", Message: fmt.Sprintf("paused with %d of %d updated replicas available", statusInt(obj, "availableReplicas"), updated)}, true
	}
	return Verdict{Ready: true, Reason: "Current", Message: "paused, rolled out"}, true
}

// onDeleteDaemonSet is metacel's rule for a DaemonSet whose updateStrategy is OnDelete, which
// kstatus holds to its updated Pods: after a template change none is until someone deletes the
// old ones. Like an OnDelete StatefulSet, it is ready once observed at its generation with a Pod
// scheduled, ready and available on every node it wants.
func onDeleteDaemonSet(obj *unstructured.Unstructured) (Verdict, bool) {
	if !isKind(obj, "apps", "DaemonSet") {
		return Verdict{}, false
	}
	if strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "updateStrategy", "type"); strategy != "OnDelete" {
		return Verdict{}, false
	}
	if v, behind := notObserved(obj); behind {
		return v, true
	}
	desired := statusInt(obj, "desiredNumberScheduled")
	for _, count := range []struct{ field, reason, name string }{
		{"currentNumberScheduled", "LessCurrent", "Current"}, {"numberReady", "LessReady", "Ready"}, {"numberAvailable", "LessAvailable", "Available"},
	} {
		if n := statusInt(obj, count.field); n < desired {
			return Verdict{Reason: count.reason, Message: fmt.Sprintf("%s: %d/%d", count.name, n, desired)}, true
		}
	}
	return Verdict{Ready: true, Reason: "Current", Message: fmt.Sprintf("Ready: %d/%d", statusInt(obj, "numberReady"), desired)}, true
}

// jobFailing is metacel's rule for a Job whose controller has decided it failed (FailureTarget
// True: past its deadline or backoff limit, or a pod failure policy's FailJob) and that waits
// for its Pods to terminate before it says Failed: kstatus calls it in progress.
func jobFailing(obj *unstructured.Unstructured) (Verdict, bool) {
	if !isJob(obj) {
		return Verdict{}, false
	}
	c, ok := findCondition(obj, "FailureTarget")
	if !ok || c.status != "True" {
		return Verdict{}, false
	}
	if failed, ok := findCondition(obj, "Failed"); ok && failed.status == "True" { // its words once it says so
		c.reason, c.message = orDefault(failed.reason, c.reason), orDefault(failed.message, c.message)
	}
	return Verdict{Failed: true, Reason: orDefault(c.reason, "JobFailed"), Message: orDefault(c.message, "the Job has failed")}, true
}

// statefulSetLessAvailable is metacel's rule for a StatefulSet updated RollingUpdate, which
// kstatus calls Current with its replicas ready: it is ready once they are available too (ready
// for minReadySeconds), as an OnDelete one is.
func statefulSetLessAvailable(obj *unstructured.Unstructured) (Verdict, bool) {
	if !isKind(obj, "apps", "StatefulSet") {
		return Verdict{}, false
	}
	available, found, _ := unstructured.NestedInt64(obj.Object, "status", "availableReplicas")
	if replicas := specReplicas(obj); found && available < replicas {
		return Verdict{Reason: "LessAvailable", Message: fmt.Sprintf("Available: %d/%d", available, replicas)}, true
	}
	return Verdict{}, false
}

// podRecoverable turns kstatus's failure of a Pod that has not failed (phase Failed) into not
// ready: containers crash-looping restart, and a Pod not scheduled yet is once a node fits it
// (the scheduler's message says why not).
func podRecoverable(obj *unstructured.Unstructured, v Verdict) Verdict {
	if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase == "Failed" {
		return v
	}
	v.Failed = false
	if c, ok := findCondition(obj, "PodScheduled"); ok && c.status == "False" {
		v.Reason, v.Message = orDefault(c.reason, v.Reason), orDefault(c.message, v.Message)
	}
	return v
}

// readinessConditions are the conditions that say an object is ready, by precedence: Ready, the
// convention kstatus reads; else Available (operators' workloads, APIServices); else Programmed
// (Gateway API).
var readinessConditions = []string{"Ready", "Available", "Programmed"}

// decidingCondition returns the first of readinessConditions that obj has, and its type.
func decidingCondition(obj *unstructured.Unstructured) (condition, string, bool) {
	for _, t := range readinessConditions {
		if c, ok := findCondition(obj, t); ok {
			return c, t, true
		}
	}
	return condition{}, "", false
}

// conditionNotTrue is metacel's rule for an object kstatus calls Current without a Ready
// condition (it reads no other): its Available or Programmed condition, when it has one, says
// whether it is ready (a Gateway Programmed Unknown while its controller works is not).
func conditionNotTrue(obj *unstructured.Unstructured) (Verdict, bool) {
	if judgedByKstatus(obj) {
		return Verdict{}, false // a Pod that has succeeded is ready, its Ready condition False (PodCompleted)
	}
	c, t, ok := decidingCondition(obj)
	if !ok || c.status == "True" {
		return Verdict{}, false
	}
	return Verdict{Reason: orDefault(c.reason, t+c.status), Message: orDefault(c.message, fmt.Sprintf("its %s condition is %s", t, c.status))}, true
}

// conditionBehind is metacel's generation rule: a condition that says the object is ready
// (decidingCondition), judged at another generation than the object's, says nothing of the
// object as it is (kstatus reads only status.observedGeneration).
func conditionBehind(obj *unstructured.Unstructured) (Verdict, bool) {
	c, t, ok := decidingCondition(obj)
	if !ok || c.observedGeneration == 0 || c.observedGeneration == obj.GetGeneration() {
		return Verdict{}, false
	}
	return Verdict{
		Reason:  t + "ConditionBehind",
		Message: fmt.Sprintf("its %s condition is of generation %d, and the object is at generation %d", t, c.observedGeneration, obj.GetGeneration()),
	}, true
}

// judgedByKstatus reports whether kstatus has a rule of its own for obj's kind (the built-in
// workloads, Pods, claims, Services, PodDisruptionBudgets, CRDs), which reads their conditions
// as their controllers mean them.
func judgedByKstatus(obj *unstructured.Unstructured) bool {
	switch obj.GroupVersionKind().Group {
	case "", "apps", "batch", "policy", "apiextensions.k8s.io":
		return true
	}
	return false
}

// notObserved says that obj's controller has not observed its generation yet.
func notObserved(obj *unstructured.Unstructured) (Verdict, bool) {
	if observed := statusInt(obj, "observedGeneration"); observed < obj.GetGeneration() {
		return Verdict{Reason: "LatestGenerationNotObserved", Message: fmt.Sprintf("its controller has not observed generation %d yet", obj.GetGeneration())}, true
	}
	return Verdict{}, false
}

// specReplicas is a workload's spec.replicas, 1 when unset (the API server's default).
func specReplicas(obj *unstructured.Unstructured) int64 {
	replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		return 1
	}
	return replicas
}

// statusInt is an integer of obj's status, 0 when unset.
func statusInt(obj *unstructured.Unstructured, field string) int64 {
	n, _, _ := unstructured.NestedInt64(obj.Object, "status", field)
	return n
}
