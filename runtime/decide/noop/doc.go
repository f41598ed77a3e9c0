// Package noop is the no-op check of the write decision: whether applying a desired child would
// change the observed one. A child whose observed state already holds every field the policy sets
// needs no write, so a converged parent costs none. It lives with the decision (package decide
// calls it), apart from package apply, which writes: apply's only part in it is the managed-fields
// reader (apply.ManagedBy) that says which fields metacel applied.
//
// The check (Schema.NeedsApply) follows the kind's schema, as server-side apply does, so that a
// change is never judged "no change" and skipped for ever, and a converged child never looks
// changed (a write on every sync):
//   - strings compare as strings ("1.1" and "1.10", "1000" and "1e3", "10" and "010" differ);
//     only a quantity compares by value ("0.5" and "500m"), where the schema says quantity:
//     resource.Quantity in built-in kinds, x-kubernetes-int-or-string in a CRD. Numbers compare
//     by value (2 and 2.0 are equal), integers exactly;
//   - a map list (containers by name, ports by containerPort and protocol, volumes by name,
//     x-kubernetes-list-type: map) matches items by key, in any order, ignoring items others added
//     (a token volume, an injected sidecar) wherever they are; a set (x-kubernetes-list-type:
//     set) matches values in any order; an atomic list (a container's args, tolerations, a CRD
//     list without a list type) matches item by item in order, and may have more items after
//     them, as admission appends some (default tolerations);
//   - a zero value the server drops ("", 0, false, empty) matches an absent field; in a built-in
//     kind, a zero the server reads as unset (a field of its Go type that is no pointer and is
//     encoded with omitempty: a Service's clusterIP "", a container's imagePullPolicy "")
//     matches whatever the server allocated or defaulted there, while metacel's managed fields
//     own the field (another writer's change takes it over, and is a change); fields only
//     observed has (defaults, status, other managers' fields) do not matter.
//
// SchemaFor gives the schema: a CRD's OpenAPI schema when the caller has it, else the
// structured-merge-diff schema client-go ships for built-in kinds. Without either, strings compare
// strictly and lists follow metacel's managed fields (keyed items by key, set values by value,
// others in order); with no managed fields either, items that all have distinct names match by
// name, in order, whatever lies between them.
//
// What the check does not look for is what the policy no longer sets (a field, a list item, a set
// value metacel applied before): every child render gives carries the metacel.dev/desired-hash
// annotation, a hash of the whole child as rendered, so a child the policy changed in any way,
// removals included, differs from the observed one in that annotation and needs an apply, which
// removes what is no longer sent. The check is there for the other writers: a field they changed
// (a drift) is a change, what they added is not.
//
// Observed objects are only compared, never changed: their managed fields are read in place.
package noop
