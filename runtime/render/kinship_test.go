package render

import (
	"testing"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
)

// TestKinshipDecidesWhichObjectsAreAParentsChild covers each rule of Kinship, asked as each of its
// callers asks: a render (NewKinship: resources, reach, record when the objects come from the
// cluster), a create that found a desired child's name taken (its marks and managed fields
// only) and the finalizer (the render's kinship, except what garbage collection removes).
func TestKinshipDecidesWhichObjectsAreAParentsChild(t *testing.T) {
	c := load(t, observedPolicy)
	// the parent (MyApp ns/app, uid u-1) records one child without an ownerReference: uid rec
	parent := obj(t, `{apiVersion: demo.rtfm.co.ua/v1, kind: MyApp, metadata: {name: app, namespace: ns, uid: u-1, annotations: {metacel.dev/children: rec}}}`)
	render := func(checkRecord bool) *Kinship {
		return NewKinship(t.Context(), c, Input{Parent: parent, Mapper: kinds.NewCatalog(), CheckRecord: checkRecord})
	}
	adopt := &Kinship{Policy: c.Name(), Parent: parent}
	finalizer := render(true)
	finalizer.ExceptCollected = true
	const (
		unmarked      = "(unmarked)"
		ownedByParent = `ownerReferences: [{apiVersion: demo.rtfm.co.ua/v1, kind: MyApp, name: app, uid: u-1, controller: true}]`
		ownedByOther  = `ownerReferences: [{apiVersion: v1, kind: X, name: x, uid: u-9, controller: true}]`
		ours          = `metacel.dev/policy: test, metacel.dev/parent-uid: u-1, metacel.dev/child-id: cm`
	)
	cm := func(meta string) string {
		return "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: ns, " + meta + "}}"
	}
	tests := []struct {
		name   string
		kin    *Kinship
		obj    string
		facts  Facts
		why    string // "" when the object is the parent's child
		reason string // the reason it is reported under, when it carries the parent's labels; unmarked: Verdict.Unmarked
	}{
		{"offline, an object with no mark at all is a child (a file written by hand)", render(false), cm("uid: x"), Facts{}, "", ""},
		{"an object of a resource the policy has no children of is not a child",
			render(false), `{apiVersion: v1, kind: Secret, metadata: {name: c, namespace: ns}}`, Facts{}, `policy "test" has no child resource secrets`, ""},
		{"the policy label of another policy makes no child", render(false), cm("labels: {metacel.dev/policy: other}"), Facts{},
			`its metacel.dev/policy label names policy "other"`, ""},
		{"the policy-name label of another policy makes no child, whatever the legacy label says", render(false), cm("labels: {metacel.dev/policy-name: other, metacel.dev/policy: test}"), Facts{},
			`its metacel.dev/policy-name label names policy "other"`, ""},
		{"the parent-uid label of another parent makes no child", render(false), cm("labels: {metacel.dev/parent-uid: u-2}, " + ownedByParent), Facts{},
			"its metacel.dev/parent-uid label names another parent (u-2)", ""},
		{"the parent-uid label of the parent makes a child whatever its controller", render(false), cm("labels: {metacel.dev/parent-uid: u-1}, " + ownedByOther), Facts{}, "", ""},
		{"a controller ownerReference to another owner makes no child", render(false), cm(ownedByOther), Facts{},
			"its controller ownerReference names another owner (X x, u-9)", ""},
		{"an object metacel did not apply is no child, whatever its labels", adopt, cm("labels: {" + ours + "}"), Facts{Applied: NotAppliedByMetacel, ChildID: "cm"},
			"metacel did not apply it (its managed fields have no entry of metacel's)", ""},
		{"adopt: metacel's object of the parent is taken over", adopt, cm("labels: {" + ours + "}"), Facts{Applied: AppliedByMetacel, ChildID: "cm"}, "", ""},
		{"adopt: another policy's object of the same parent is not taken over",
			adopt, cm("labels: {metacel.dev/policy: other, metacel.dev/parent-uid: u-1}"), Facts{Applied: AppliedByMetacel, ChildID: "cm"},
			`its metacel.dev/policy label names policy "other"`, ""},
		{"adopt after the parent-uid label was removed: its controller ownerReference names the parent",
			adopt, cm(ownedByParent), Facts{Applied: AppliedByMetacel, ChildID: "cm"}, "", ""},
		{"adopt after the parent-uid label was removed: a controller ownerReference to another owner",
			adopt, cm("labels: {metacel.dev/policy: test, metacel.dev/child-id: cm}, " + ownedByOther), Facts{Applied: AppliedByMetacel, ChildID: "cm"},
			"its controller ownerReference names another owner (X x, u-9)", ""},
		{"adopt after the parent-uid label was removed, no ownerReference: metacel's labels name the policy and the child",
			adopt, cm("labels: {metacel.dev/policy: test, metacel.dev/child-id: cm}"), Facts{Applied: AppliedByMetacel, ChildID: "cm"}, "", ""},
		{"adopt after the parent-uid label was removed, no ownerReference: its child-id label names another child",
			adopt, cm("labels: {metacel.dev/policy: test, metacel.dev/child-id: other}"), Facts{Applied: AppliedByMetacel, ChildID: "cm"},
			`it has neither a metacel.dev/parent-uid label nor a controller ownerReference, and its metacel.dev/policy-name and metacel.dev/child-id labels do not name policy "test" and child "cm"`, ""},
		{"adopt: an object with no mark, known to be metacel's, is no child", adopt, cm("uid: x"), Facts{Applied: AppliedByMetacel, ChildID: "cm"},
			`it has neither a metacel.dev/parent-uid label nor a controller ownerReference, and its metacel.dev/policy-name and metacel.dev/child-id labels do not name policy "test" and child "cm"`, ""},
		{"out of reach: a child in another namespace is left alone, reported", render(false), `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: other, labels: {` + ours + `}}}`, Facts{},
			`it is in namespace "other", where this MyApp's children may not be: the policy reaches the parent's own namespace only (its spec.confinement.childNamespaces allows others)`, contract.ReasonChildOutOfReach},
		{"a create does not ask the reach: its render placed the child", adopt, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: other, labels: {` + ours + `}}}`,
			Facts{Applied: AppliedByMetacel, ChildID: "cm"}, "", ""},
		{"not recorded: an undesired object the record does not name is left alone, reported", render(true), cm("uid: x, labels: {" + ours + "}"), Facts{Undesired: true},
			`metacel did not write it for this MyApp (its UID is not in the parent's metacel.dev/children annotation)`, contract.ReasonChildNotRecorded},
		{"recorded: an undesired object the record names is a child", render(true), cm("uid: rec, labels: {" + ours + "}"), Facts{Undesired: true}, "", ""},
		{"not recorded, an ownerReference to the parent: a child, garbage collection's", render(true), cm("uid: x, labels: {" + ours + "}, " + ownedByParent), Facts{Undesired: true}, "", ""},
		{"not recorded, of a desired child's name: a child, metacel applies and records it", render(true), cm("uid: x, labels: {" + ours + "}"), Facts{}, "", ""},
		{"offline, the record is not asked", render(false), cm("uid: x, labels: {" + ours + "}"), Facts{Undesired: true}, "", ""},
		{"offline, an undesired object with no mark at all is no child, never deleted (a misspelt name)", render(false), cm("uid: x"), Facts{Undesired: true},
			"no desired child has its name, and it carries no mark of this MyApp (no metacel.dev/parent-uid or metacel.dev/child-id label, no ownerReference to it, no managed fields of metacel's): " +
				"offline, an object given by hand is deleted only when it carries one", unmarked},
		{"offline, an undesired object with an ownerReference to the parent is a child", render(false),
			cm("ownerReferences: [{apiVersion: demo.rtfm.co.ua/v1, kind: MyApp, name: app, uid: u-1}]"), Facts{Undesired: true}, "", ""},
		{"offline, an undesired object labelled as one of the policy's children is a child (an old child written by hand)", render(false),
			cm("labels: {metacel.dev/child-id: cm}"), Facts{Undesired: true}, "", ""},
		{"offline, an undesired object metacel applied (its managed fields) is a child", render(false),
			cm("managedFields: [{manager: metacel, operation: Apply, fieldsV1: {f:data: {}}}]"), Facts{Undesired: true}, "", ""},
		{"in the cluster, an undesired object with no mark at all is left alone as unrecorded", render(true), cm("uid: x"), Facts{Undesired: true},
			`metacel did not write it for this MyApp (its UID is not in the parent's metacel.dev/children annotation)`, contract.ReasonChildNotRecorded},
		{"the finalizer leaves what garbage collection removes", finalizer, cm("uid: rec, labels: {" + ours + "}, " + ownedByParent), Facts{Applied: AppliedByMetacel, Undesired: true},
			"garbage collection deletes it with this MyApp (it has an ownerReference to it)", ""},
		{"the finalizer cleans up a recorded child garbage collection cannot reach", finalizer, cm("uid: rec, labels: {" + ours + "}"), Facts{Applied: AppliedByMetacel, Undesired: true}, "", ""},
		{"the finalizer leaves a child metacel did not apply", finalizer, cm("uid: rec, labels: {" + ours + "}"), Facts{Applied: NotAppliedByMetacel, Undesired: true},
			"metacel did not apply it (its managed fields have no entry of metacel's)", ""},
		{"the finalizer reads whether metacel applied an object from its managed fields: applied", finalizer,
			cm("uid: rec, labels: {" + ours + "}, managedFields: [{manager: metacel, operation: Apply, fieldsV1: {f:data: {}}}]"), Facts{Applied: AppliedAsManagedFieldsSay, Undesired: true}, "", ""},
		{"the finalizer reads whether metacel applied an object from its managed fields: not applied", finalizer,
			cm("uid: rec, labels: {" + ours + "}, managedFields: [{manager: kubectl, operation: Apply, fieldsV1: {f:data: {}}}]"), Facts{Applied: AppliedAsManagedFieldsSay, Undesired: true},
			"metacel did not apply it (its managed fields have no entry of metacel's)", ""},
		{"the finalizer leaves an unrecorded object, reported", finalizer, cm("uid: x, labels: {" + ours + "}"), Facts{Applied: AppliedByMetacel, Undesired: true},
			`metacel did not write it for this MyApp (its UID is not in the parent's metacel.dev/children annotation)`, contract.ReasonChildNotRecorded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.kin.Judge(obj(t, tc.obj), tc.facts)
			reason := v.Reason
			if v.Unmarked {
				reason += unmarked
			}
			if v.Why != tc.why || reason != tc.reason {
				t.Errorf("Judge = %q (reason %q), want %q (reason %q)", v.Why, reason, tc.why, tc.reason)
			}
			if v.Child() != (tc.why == "") {
				t.Errorf("Child() = %v with why %q", v.Child(), v.Why)
			}
		})
	}
}
