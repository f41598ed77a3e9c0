package render

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// app reads the name of db, listed after it: db is applied first, app once db exists.
const appAfterDB = `  children:
    - id: app
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: app}, data: {db: "${children.db.metadata.name}"}}
    - id: db
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: db}}
`

func TestAChildThatReadsAnotherIsAppliedOnceItExists(t *testing.T) {
	db := obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: db, namespace: ns, labels: {metacel.dev/child-id: db, metacel.dev/parent-uid: u-1}}}")
	app := obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: app, namespace: ns, labels: {metacel.dev/child-id: app, metacel.dev/parent-uid: u-1}}}")
	tests := []struct {
		name          string
		observed      []*unstructured.Unstructured
		wantChildren  []string
		wantHeld      string
		wantUndesired int
	}{
		{"before db exists, app waits: only db is desired", nil, []string{"db"},
			"after ConfigMap ns/db exists: it reads children.db", 0},
		{"once db exists, app is desired, after it", []*unstructured.Unstructured{db}, []string{"db", "app"}, "", 0},
		{"an app that exists while db does not is kept as it is, not deleted", []*unstructured.Unstructured{app}, []string{"db"},
			"after ConfigMap ns/db exists: it reads children.db", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, kids, err := RenderObserved(t.Context(), load(t, appAfterDB), Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()}, tc.observed)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range out.Children {
				ids = append(ids, c.ID)
			}
			if len(ids) != len(tc.wantChildren) || (len(ids) > 0 && ids[0] != tc.wantChildren[0]) || (len(ids) > 1 && ids[1] != tc.wantChildren[1]) {
				t.Errorf("desired children %v, want %v", ids, tc.wantChildren)
			}
			held := ""
			if len(out.Held) > 0 {
				held = out.Held[0].Why
			}
			if held != tc.wantHeld {
				t.Errorf("held %q, want %q", held, tc.wantHeld)
			}
			if len(kids.Undesired) != tc.wantUndesired {
				t.Errorf("undesired %v, want %d", kids.Undesired, tc.wantUndesired)
			}
			if tc.wantHeld != "" && out.Ready() {
				t.Errorf("a parent with an entry that waits is Ready")
			}
		})
	}
}

// c reads b, which reads a: while a does not exist, b waits, and so does c, whose template would
// read a b that is not there (the render failed on it, for good); with dependsOn, c was applied
// before b and a were ready.
func TestAWaitCarriesDownAChain(t *testing.T) {
	const reads = `  children:
    - id: a
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
    - id: b
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}, data: {a: "${children.a.metadata.name}"}}
    - id: c
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {b: "${children.b.metadata.name}"}}
`
	const dependsOn = `  children:
    - id: a
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
    - id: b
      dependsOn: [a]
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
    - id: c
      dependsOn: [b]
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}
`
	a := obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: ns, labels: {metacel.dev/child-id: a, metacel.dev/parent-uid: u-1}}}")
	b := obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: ns, labels: {metacel.dev/child-id: b, metacel.dev/parent-uid: u-1}}}")
	tests := []struct {
		name     string
		policy   string
		observed []*unstructured.Unstructured
		want     string // the desired children, then the held entries
		wantWhy  string // why c is held
	}{
		{"it reads: a first, b and c wait", reads, nil, "a | b c", "after b, which waits itself: it reads children.b"},
		{"it reads: once a exists, b; c waits", reads, []*unstructured.Unstructured{a}, "a b | c", "after ConfigMap ns/b exists: it reads children.b"},
		{"it reads: once b exists, c", reads, []*unstructured.Unstructured{a, b}, "a b c | ", ""},
		{"dependsOn: a first, b and c wait", dependsOn, nil, "a | b c", "after b, which waits itself: its dependsOn names b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := RenderObserved(t.Context(), load(t, tc.policy), Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()}, tc.observed)
			if err != nil {
				t.Fatal(err)
			}
			var desired, held []string
			why := ""
			for _, c := range out.Children {
				desired = append(desired, c.ID)
			}
			for _, h := range out.Held {
				held = append(held, h.ID)
				if h.ID == "c" {
					why = h.Why
				}
			}
			if got := strings.Join(desired, " ") + " | " + strings.Join(held, " "); got != tc.want {
				t.Errorf("desired | held: %q, want %q", got, tc.want)
			}
			if why != tc.wantWhy {
				t.Errorf("c held for %q, want %q", why, tc.wantWhy)
			}
		})
	}
}

// A Pod that depends on its PersistentVolumeClaim is applied once the claim exists, bound or not:
// a claim of a WaitForFirstConsumer StorageClass (most clouds' default) binds only once a Pod
// that uses it is scheduled, so waiting for it to be bound held the Pod, and the parent, for ever.
// The parent stays not Ready while the claim is not bound.
func TestAPodThatDependsOnItsClaimIsAppliedOnceTheClaimExists(t *testing.T) {
	text := strings.Replace(policyHead, "resource: configmaps", "resource: persistentvolumeclaims", 1) + `    - {apiVersion: v1, resource: pods}
  children:
    - id: data
      template: {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}
    - id: pod
      dependsOn: [data]
      template:
        apiVersion: v1
        kind: Pod
        metadata: {name: app}
        spec:
          containers: [{name: app, image: busybox}]
          volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]
`
	cs, err := policyLoad(text)
	if err != nil {
		t.Fatal(err)
	}
	pending := obj(t, `{apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: data, namespace: ns, labels: {metacel.dev/child-id: data, metacel.dev/parent-uid: u-1}},
  spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}, status: {phase: Pending}}`)
	reads, err := policyLoad(strings.Replace(text, "metadata: {name: app}", `metadata: {name: app, annotations: {size: "${children.data.status.?capacity.?storage.orValue('')}"}}`, 1))
	if err != nil {
		t.Fatal(err)
	}
	twice, err := policyLoad(strings.Replace(text, "dependsOn: [data]", "dependsOn: [data, data]", 1))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		policy   *policy.Compiled
		observed []*unstructured.Unstructured
		want     string // desired | held
	}{
		{"before the claim exists, the Pod waits", cs, nil, "data | pod"},
		{"once the claim exists, pending, the Pod is applied", cs, []*unstructured.Unstructured{pending}, "data pod | "},
		{"a Pod that reads the claim's status waits for it to be bound", reads, []*unstructured.Unstructured{pending}, "data | pod"},
		{"a dependsOn that names the claim twice", twice, []*unstructured.Unstructured{pending}, "data pod | "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := RenderObserved(t.Context(), tc.policy, Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()}, tc.observed)
			if err != nil {
				t.Fatal(err)
			}
			var desired, held []string
			for _, c := range out.Children {
				desired = append(desired, c.ID)
			}
			for _, h := range out.Held {
				held = append(held, h.ID)
			}
			if got := strings.Join(desired, " ") + " | " + strings.Join(held, " "); got != tc.want {
				t.Errorf("desired | held: %q, want %q", got, tc.want)
			}
			if out.Ready() {
				t.Error("the parent is Ready while its claim is not bound")
			}
		})
	}
}

func policyLoad(text string) (*policy.Compiled, error) {
	cs, err := policy.Load("p.yaml", []byte(text), kinds.NewCatalog())
	if err != nil {
		return nil, err
	}
	return cs[0], nil
}
