// Package policystatus shows each policy's status on the ConfigMap that holds it, where people
// already look:
//
//	kubectl get configmaps -n metacel-system -l metacel.dev/policy=true \
//	  -L metacel.dev/state,metacel.dev/version,metacel.dev/parents,metacel.dev/ready,metacel.dev/failing,metacel.dev/rollout
//
// The summary is in labels because `kubectl get -L` shows labels as columns, with no CRD to
// install and no printer columns to define: the state (the most severe among the ConfigMap's
// policies: Invalid > RolledBack > NotSynced > Waiting > RollingOut > Running), the running
// version, the parents, ready and failing counts, and the rollout step ("2-of-3") while one is under
// way. Label values are limited to 63 characters of a small alphabet, so they are sanitised;
// the full detail, one Status per policy, is in the annotation metacel.dev/status as JSON, for
// tools and for ConfigMaps holding several policies, and the last error in metacel.dev/last-error.
//
// A Reporter holds the latest Status of every policy (Set and Forget are cheap and safe to call
// from any goroutine, as often as wanted) and Run writes what changed, at most once per second
// per ConfigMap. A write is a server-side apply of the ConfigMap's metadata only, with its own
// field manager (metacel-status): the runtime owns only these labels and annotations, so a user's
// `kubectl apply` of the ConfigMap, client-side or server-side, neither conflicts with them nor
// removes them, and a label no longer wanted is removed by applying without it. The apply names
// the ConfigMap's UID, which the API server checks: a ConfigMap deleted meanwhile is never
// re-created with only a status. Nothing is written when the labels and annotations wanted are
// those last applied or, after a restart, those the ConfigMap already holds: an idle runtime
// makes no writes. A failed write is retried with backoff, and every ConfigMap is read again now
// and then (10 minutes) so that labels someone removed (kubectl replace, edit) come back.
//
// Run takes the ConfigMaps to look at from a client-go delaying workqueue (util/workqueue), the
// scheduler Kubernetes controllers use, rather than one of its own: a ConfigMap is queued once
// however many Sets, and again after a delay (AddAfter) for its interval, its backoff or its
// resync; the backoff is the workqueue's per-item exponential rate limiter (2 s, doubling, at
// most 2 minutes, starting over after a write).
//
// The writes change the ConfigMap's metadata, never its data: the policy source sends a
// snapshot for them, but a unit is identified by its data, so no policy reloads.
package policystatus
