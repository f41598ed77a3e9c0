package decide_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/decide"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
)

// chainPolicy makes three ConfigMaps: cfg reads children.db, app reads children.cfg, and logs
// names db in its dependsOn; each is included while the parent's data says so.
const chainPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: chain}
spec:
  parentResource: {apiVersion: v1, resource: configmaps}
  childResources:
    - {apiVersion: v1, resource: configmaps}
  children:
    - id: db
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-db"}}
    - id: cfg
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-cfg"}, data: {db: "${children.db.metadata.name}"}}
    - id: app
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-app"}, data: {cfg: "${children.cfg.metadata.name}"}}
    - id: logs
      dependsOn: [db]
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-logs"}}
`

func loadChain(t *testing.T) *policy.Compiled {
	t.Helper()
	catalog, err := kinds.LoadCRDFiles(nil)
	if err != nil {
		t.Fatal(err)
	}
	compiled, err := policy.Load("chain.yaml", []byte(chainPolicy), catalog)
	if err != nil || len(compiled) != 1 {
		t.Fatalf("load: %v", err)
	}
	return compiled[0]
}

// chainChild is the parent's child id, deleting since when not "".
func chainChild(t *testing.T, id, deleting string) *unstructured.Unstructured {
	t.Helper()
	obj := object(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: p-`+id+`, namespace: ns, uid: u-`+id+`, labels: {metacel.dev/child-id: `+id+`, metacel.dev/parent-uid: p-1}}}`)
	if deleting != "" {
		obj.Object["metadata"].(map[string]any)["deletionTimestamp"] = deleting
	}
	return obj
}

func TestRemovalsGoInReverseOrder(t *testing.T) {
	const deleting = "2026-11-26T00:00:00Z"
	c := loadChain(t)
	tests := []struct {
		name        string
		objs, going []string // ids, "id@" when being deleted
		want        []string // "action id", "wait id for blocker"
		wantWhy     string   // in the first wait's Why
	}{
		{"children no one waits for are deleted at once", []string{"app", "logs"}, nil,
			[]string{"delete app", "delete logs"}, ""},
		{"a child waits while the child that reads it still exists", []string{"cfg", "app"}, nil,
			[]string{"wait cfg for app", "delete app"}, "app: it reads children.cfg"},
		{"a child waits for what waits for it through others, nearest first", []string{"db", "cfg", "app", "logs"}, nil,
			[]string{"wait db for cfg", "wait cfg for app", "delete app", "delete logs"}, "cfg: it reads children.db"},
		{"a child waits while the one that reads it is being deleted", []string{"cfg", "app@"}, nil,
			[]string{"wait cfg for app"}, ""},
		{"a dependsOn holds back the child it names", []string{"db", "logs@"}, nil,
			[]string{"wait db for logs"}, "logs: its dependsOn names db"},
		{"a desired child being deleted holds back what it reads", []string{"cfg"}, []string{"app@"},
			[]string{"wait cfg for app"}, ""},
		{"a child is deleted once what waits for it is gone", []string{"cfg"}, nil,
			[]string{"delete cfg"}, ""},
		{"a desired child that stays holds nothing back", []string{"db"}, nil,
			[]string{"delete db"}, ""},
	}
	stamp := func(spec string) (string, string) {
		if id, ok := strings.CutSuffix(spec, "@"); ok {
			return id, deleting
		}
		return spec, ""
	}
	objects := func(specs []string) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, s := range specs {
			id, at := stamp(s)
			out = append(out, chainChild(t, id, at))
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, going := objects(tt.objs), objects(tt.going)
			var got []string
			why := ""
			for _, s := range decide.Removals(objs, going, c) {
				id := s.Observed.GetLabels()["metacel.dev/child-id"]
				if s.Action == decide.Wait {
					got = append(got, "wait "+id+" for "+s.Blocker.GetLabels()["metacel.dev/child-id"])
					if why == "" {
						why = s.Why
					}
					continue
				}
				got = append(got, string(s.Action)+" "+id)
			}
			if strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
				t.Errorf("steps = %q, want %q", got, tt.want)
			}
			if !strings.Contains(why, tt.wantWhy) {
				t.Errorf("why = %q, want it to say %q", why, tt.wantWhy)
			}
		})
	}
}

func TestOrdered(t *testing.T) {
	if !decide.Ordered(loadChain(t)) {
		t.Error("a policy whose children read each other: not Ordered")
	}
	if decide.Ordered(load(t, "InPlace")) {
		t.Error("a policy of one child: Ordered")
	}
}

func TestAChildThatWaitsForOthersIsDeletedInTheForegroundWhenItsKindOwnsObjects(t *testing.T) {
	c := loadChain(t)
	tests := []struct {
		name, id, apiVersion, kind string
		want                       bool
	}{
		{"a Deployment that waits for others", "app", "apps/v1", "Deployment", true},
		{"a Job that waits for others", "app", "batch/v1", "Job", true},
		{"a ConfigMap that waits for others", "app", "v1", "ConfigMap", false},
		{"a Deployment that waits for none", "db", "apps/v1", "Deployment", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := chainChild(t, tt.id, "")
			obj.SetAPIVersion(tt.apiVersion)
			obj.SetKind(tt.kind)
			steps := decide.Removals([]*unstructured.Unstructured{obj}, nil, c)
			if len(steps) != 1 || steps[0].Action != decide.Delete || steps[0].Foreground != tt.want {
				t.Errorf("steps %+v, want one delete, in the foreground: %v", steps, tt.want)
			}
		})
	}
}
