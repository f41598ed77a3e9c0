// Package readiness judges whether an object a policy owns is ready, by its kind, when the
// policy gives the child no readyWhen: a Deployment, StatefulSet or DaemonSet rolled out at its
// generation, a Job complete, a PersistentVolumeClaim bound, a Pod ready, a custom resource whose
// Ready condition is True at its generation.
//
// The rules are those of kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status), the library Flux,
// kpt and cli-utils' appliers judge objects with, so a parent is Ready when the tools a platform
// team already runs would call its children Current. Some rules are metacel's own, because a
// parent's readiness is what another object waits for, where kstatus only asks whether an apply
// has taken effect. Instead of kstatus's verdict, where it misjudges a state:
//   - a paused Deployment is judged as kubectl rollout status judges it (kstatus never calls it
//     Current);
//   - a DaemonSet updated OnDelete is ready once observed at its generation with a Pod scheduled,
//     ready and available on every node it wants (kstatus waits for updated Pods, which come only
//     when someone deletes the old ones);
//   - a Job whose controller has decided it failed (FailureTarget) has failed, while its Pods
//     terminate (kstatus calls it in progress).
//
// On top of a kstatus verdict of Current:
//   - a Job is ready only once it has completed (kstatus calls a running Job Current: it has
//     started);
//   - a Pod that failed (phase Failed) has failed (kstatus calls it Current: it has completed);
//   - a StatefulSet is ready once its replicas are available, not only ready; one updated
//     OnDelete once observed at its generation with every replica ready and available and none
//     left to remove (kstatus calls it Current as soon as it exists);
//   - a Service of type LoadBalancer is ready once its load balancer has an address (kstatus
//     asks only for a cluster IP);
//   - an object without a Ready condition is judged by its Available, else its Programmed
//     condition (kstatus reads only Ready): a Gateway its controller has not programmed is not
//     ready;
//   - an object whose deciding condition records the generation it was judged at is not ready
//     while that generation is not the object's (kstatus reads only status.observedGeneration),
//     and an object of a kind that reports conditions is not ready before it reports any (a
//     nested metacel parent before its own policy has synced it; kstatus calls an object with
//     no conditions Current).
//
// And where kstatus says failed or not: a Pod whose containers crash-loop, or that no node fits
// yet, is not ready but has not failed (both recover); a nested metacel parent whose Ready
// condition says ChildFailed has failed.
//
// A verdict says why an object is not ready, in the words of the object's own conditions where
// it has them, and whether it failed: a failed object (a Job past its backoff limit or deadline,
// a Deployment past its progress deadline, a Stalled custom resource) will not become ready
// without a change, which is what a parent's Ready condition says first.
package readiness
