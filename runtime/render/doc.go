// Package render computes what a policy wants for one parent: the desired children and the
// parent's status. It is a pure function of (compiled policy, parent, observed children, related
// objects): no API calls, no clock, no randomness, so the controller and `metacel render` run the
// same code and the CLI is an exact preview of what the cluster will get.
//
// A render runs as narrated steps: check the validations, evaluate the variables, build each
// child (includeWhen, forEach, template or expression), finish it (namespace, labels,
// ownerReference, allowlist; a built-in kind as the API server stores it, a Secret's stringData
// as data, so that it compares with what the cluster holds; and the schema of its kind: an
// object the API server would reject is InvalidChild, and no request is made), judge readiness
// (readyWhen against the observed child) and compute the status fields. All expressions of one sync, Related's and the render's, spend from one cost
// budget: the caller makes it (expr.NewBudget) and passes it to Related and, in Input.Budget, to
// Render.
//
// Which objects are a parent's children is decided here too, by one set of rules (Kinship), for
// the runtime and the CLI alike: which observed objects a render binds or prunes
// (RenderObserved), which existing object a create may take over, which the finalizer cleans up.
// Labels and a field manager's name are anyone's to set, so an object is bound or pruned only in
// a namespace the parent's children may be in (ChildReach) and, for one without an ownerReference
// to the parent, only when the parent's record names it (ChildRecord, the metacel.dev/children
// annotation the runtime writes); the others are foreign, and left alone.
//
// A sync that wrote children renders again with them, as the API server returned them, so that
// the status it writes sees them; Rerender returns that render's output, and when no expression
// of the policy reads the children (policy.Compiled.ReadsChildren) it only judges their readiness
// again, since the children and status wanted cannot have changed.
//
// A readyWhen that fails to evaluate is no failure of the render: its child is not ready, and the
// error goes to the Ready condition (Output.ReadyWhenErrors), since a readyWhen reads what other
// controllers write, and one child's status must not keep every child from being applied.
//
// Failures are typed (*Error with a Reason) so that callers can report them as the parent's
// Synced condition; they are all permanent for the given inputs: retrying the same inputs gives
// the same error, so a controller waits for an input to change rather than retrying.
package render
