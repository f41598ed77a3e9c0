// Package policytest runs policy unit tests written in YAML, with no cluster: `metacel test`.
//
// A test file is one YAML document with no apiVersion and no kind (IsTestFile), so that a folder
// may hold a policy, its CRD, its samples and its tests: Run skips the files that hold Kubernetes
// objects, with a note; one of them that holds policies (policy.Holds) must parse, or it fails as
// a test does. A test file names a policy (a file, as `metacel render` reads it) and the CRDs that type it; each
// test gives a parent (a file or inline), the related objects and the observed children it starts
// with, and steps. A step is one sync: it may first change the world (a JSON merge patch of the
// parent, whose generation then goes up as the API server would raise it; related and observed
// objects merged into the object of the same kind and name, or added), then it says what the sync
// must give:
//
//	expect:
//	  match: subset          # exact (the default) or subset
//	  children: [...]        # the desired children
//	  status: {...}          # the parent's status, as the runtime writes it
//	  changes: [...]         # "delete v1 ConfigMap ns/name", "recreate v1 Pod ns/name", ...
//	  error: "..."           # the step fails with this error (subset: a part of it)
//
// A key left out is not checked. With match: subset, maps need only the keys given, lists of
// objects with a type (conditions) or a name (containers) are matched by it, children by kind and
// name (or id) and, when given, namespace, other lists item by item; an empty list (children: [])
// expects an empty list.
//
// An expected child is compared in the author's terms (authorsTerms): `id: <child id>` names the
// policy's child that made it (a Job named after a hash), a metadata.name with *, ? or [ is a glob,
// and a Secret's stringData is compared with the data the API server stores it as, decoded, the
// diff showing stringData and a note saying so.
//
// Each step syncs with preview.Run, the code of `metacel render`: so a test sees what the cluster
// would do, its CRD's defaults and validation included. Between steps, the world moves on as the
// runtime leaves it: the parent has the status the sync wrote, and the observed children are the
// desired ones as applied (an updated child keeps what the policy does not set, such as its
// status; a created or recreated one is the desired object alone; an OnDelete child is left as it
// was; a deleted or released one is gone). A step's observed edits then play the other
// controllers: a Deployment becoming available, a Pod running. An observed object that no desired
// child is and that carries no mark of the parent is never deleted offline (render.Kinship, rule
// 6): in a test it is a mistake (a misspelt name), an error at its line that names the children
// of the previous step.
//
// Mistakes in a test file are reported with file, line and field path (policy.FieldError). Failures
// show a unified diff of what was expected and what the step gave (go-difflib); Update rewrites
// the expectations of the steps that fail with what they gave, keeping the rest of the file and
// its comments: a step without one records all it gave, exactly; one with an expectation keeps
// its match mode, its keys, its terms (ids, name patterns, stringData), their order, their
// comments and their flow style where the new value is short. A subset stays a subset
// (recordSubset): cut down to the keys and items it gives, and where those are gone, the items
// given recorded by what names them, never whole.
package policytest
