package render

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/test/testpolicies"
)

// policyHead is a policy's head: MyApps (untyped: no CRD) with ConfigMap children.
var policyHead = testpolicies.YAML("myapp-head", testpolicies.Fills{"RESOURCE": "configmaps"})

func load(t testing.TB, body string) *policy.Compiled {
	t.Helper()
	cs, err := policy.Load("p.yaml", []byte(policyHead+body), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

func obj(t testing.TB, s string) *unstructured.Unstructured {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil { // integers stay int64, as in the cluster
		t.Fatal(err)
	}
	return u
}

const testParent = `
apiVersion: demo.rtfm.co.ua/v1
kind: MyApp
metadata: {name: app, namespace: ns, uid: u-1, generation: 3}
spec: {names: [a, b], other: elsewhere, count: 2}
`

func TestRender(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		names []string // namespace/name of the desired children, in order
	}{
		{"forEach makes one child per item, in order", `  children:
    - id: cm
      forEach: "parent.spec.names"
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}-${each}"}}
`, []string{"ns/app-a", "ns/app-b"}},
		{"includeWhen false makes no child", `  children:
    - id: cm
      includeWhen: "parent.spec.count > 5"
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`, nil},
		{"an expression may return a list", `  children:
    - id: cm
      expression: "parent.spec.names.map(n, {'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': n}})"
`, []string{"ns/a", "ns/b"}},
		{"cross-namespace child when allowed", `  confinement:
    childNamespaces: {names: [elsewhere]}
  children:
    - id: cm
      crossNamespace: true
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: "${parent.spec.other}"}}
`, []string{"elsewhere/x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(t.Context(), load(t, tc.body), Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range out.Children {
				got = append(got, c.Object.GetNamespace()+"/"+c.Object.GetName())
				if c.Object.GetLabels()[contract.LabelParentUID] != "u-1" || c.Object.GetLabels()[contract.LabelChildID] != "cm" {
					t.Errorf("labels missing on %s: %v", c.Object.GetName(), c.Object.GetLabels())
				}
				if owned := len(c.Object.GetOwnerReferences()) == 1; owned != c.Owned || owned != (c.Object.GetNamespace() == "ns") {
					t.Errorf("%s: owned=%v with ownerReferences %v", c.Object.GetName(), c.Owned, c.Object.GetOwnerReferences())
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.names, ",") {
				t.Errorf("children %v, want %v", got, tc.names)
			}
		})
	}
}

func TestReadiness(t *testing.T) {
	configMap := `  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`
	job := `    - apiVersion: batch/v1
      resource: jobs
  children:
    - id: job
      template:
        apiVersion: batch/v1
        kind: Job
        metadata: {name: j}
        spec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}}}
`
	jobExists := strings.Replace(job, "    - id: job\n", "    - id: job\n      readyWhen: \"true\"\n", 1)
	observedConfigMap := func(extra string) map[string][]*unstructured.Unstructured {
		return map[string][]*unstructured.Unstructured{"cm": {obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ns"+extra+"}}")}}
	}
	observedJob := func(status string) map[string][]*unstructured.Unstructured {
		return map[string][]*unstructured.Unstructured{"job": {obj(t, "{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: ns}, status: "+status+"}")}}
	}
	tests := []struct {
		name      string
		body      string
		observed  map[string][]*unstructured.Unstructured
		wantReady Condition
	}{
		{"a child that does not exist is not ready", configMap, nil,
			Condition{"Ready", "False", contract.ReasonNotReady, "waiting for ConfigMap ns/x"}},
		{"a ConfigMap is ready once it exists", configMap, observedConfigMap(""),
			Condition{"Ready", "True", contract.ReasonReady, "1 child ready"}},
		{"a child being deleted is not ready", configMap, observedConfigMap(", deletionTimestamp: '2026-01-01T00:00:00Z'"),
			Condition{"Ready", "False", contract.ReasonNotReady, "waiting for ConfigMap ns/x"}},
		{"a Job still running is not ready, and says why", job, observedJob("{startTime: '2026-01-01T00:00:00Z', active: 1}"),
			Condition{"Ready", "False", contract.ReasonNotReady, "waiting for Job ns/j (JobRunning: the Job has not completed (active 1, succeeded 0))"}},
		{"a completed Job is ready", job, observedJob("{succeeded: 1, conditions: [{type: Complete, status: 'True'}]}"),
			Condition{"Ready", "True", contract.ReasonReady, "1 child ready"}},
		{"a failed Job fails its parent's readiness, in the Job's words", job,
			observedJob("{failed: 1, conditions: [{type: Failed, status: 'True', reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}]}"),
			Condition{"Ready", "False", contract.ReasonChildFailed, "Job ns/j failed: BackoffLimitExceeded: Job has reached the specified backoff limit"}},
		{`readyWhen: "true" keeps "ready once it exists"`, jobExists, observedJob("{startTime: '2026-01-01T00:00:00Z', active: 1}"),
			Condition{"Ready", "True", contract.ReasonReady, "1 child ready"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(t.Context(), load(t, tc.body), Input{Parent: obj(t, testParent), Observed: tc.observed, Mapper: kinds.NewCatalog()})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Conditions()[1]; got != tc.wantReady {
				t.Errorf("Ready condition %+v, want %+v", got, tc.wantReady)
			}
			if out.Ready() != (tc.wantReady.Status == "True") {
				t.Errorf("Ready() %v with the condition %+v", out.Ready(), tc.wantReady)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name, body, reason, msg string
	}{
		{"forEach over a non-list at run time", `  children:
    - id: cm
      forEach: "parent.spec.count"
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}
`, contract.ReasonEvaluationError, `spec.children[0].forEach: evaluate "parent.spec.count": must return a list, got int`},
		{"missing field names the expression", `  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.spec.missing}"}}
`, contract.ReasonEvaluationError, `spec.children[0].template.metadata.name: evaluate "parent.spec.missing": no such key: missing`},
		{"another namespace needs crossNamespace", `  children:
    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: other}}
`, contract.ReasonInvalidChild, `set crossNamespace: true to allow it (it is then cleaned up by the parent's finalizer), and allow namespace "other" in spec.confinement.childNamespaces, or the sync fails with NamespaceNotAllowed`},
		{"a kind outside childResources", `  children:
    - id: cm
      expression: "{'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'x'}}"
`, contract.ReasonInvalidChild, `v1 Secret (resource "secrets") is not listed in spec.childResources`},
		{"a kind in the wrong case", `  children:
    - id: cm
      expression: "{'apiVersion': 'v1', 'kind': 'Configmap', 'metadata': {'name': 'x'}}"
`, contract.ReasonInvalidChild, `spec.children[0].kind: v1 configmaps holds objects of kind "ConfigMap", not "Configmap": write kind: ConfigMap`},
		{"an expression's object cannot name its owner", `  children:
    - id: cm
      expression: "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x', 'ownerReferences': [{'apiVersion': 'v1', 'kind': 'ConfigMap', 'name': 'o', 'uid': 'u'}]}}"
`, contract.ReasonInvalidChild, `ConfigMap "x" sets metadata.ownerReferences, which metacel sets itself`},
		{"an expression's object cannot set metacel's labels", `  children:
    - id: cm
      expression: "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x', 'labels': {'metacel.dev/parent-uid': 'other'}}}"
`, contract.ReasonInvalidChild, `sets the label "metacel.dev/parent-uid", which is metacel's own`},
		{"two children with one name", `  children:
    - id: cm
      forEach: "['x', 'x']"
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${each}"}}
`, contract.ReasonInvalidChild, "two children are the same object ConfigMap ns/x"},
		{"a failed validation gives its message", `  validations:
    - expression: "parent.spec.count > 5"
      messageExpression: "'count ' + string(parent.spec.count) + ' is too small'"
`, contract.ReasonValidationFailed, "count 2 is too small"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(t.Context(), load(t, tc.body), Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()})
			var re *Error
			if !errors.As(err, &re) || re.Reason != tc.reason || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want reason %s and message containing %q", err, tc.reason, tc.msg)
			}
		})
	}
}

func TestNewStatusKeepsTransitionTimes(t *testing.T) {
	parent := obj(t, testParent)
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t2 := metav1.NewTime(t1.Add(time.Hour))
	out := &Output{Children: []Child{{}}, NotReady: []string{"ConfigMap ns/x"}}
	first, err := NewStatus(parent, map[string]any{"phase": "A"}, out.Conditions(), &t1)
	if err != nil {
		t.Fatal(err)
	}
	parent.Object["status"] = first
	out.NotReady = nil
	second, err := NewStatus(parent, map[string]any{"phase": "B"}, out.Conditions(), &t2)
	if err != nil {
		t.Fatal(err)
	}
	conds := second["conditions"].([]any)
	synced, ready := conds[0].(map[string]any), conds[1].(map[string]any)
	if synced["lastTransitionTime"] != "2026-01-01T00:00:00Z" {
		t.Errorf("Synced stayed True: its time must stay, got %v", synced["lastTransitionTime"])
	}
	if ready["lastTransitionTime"] != "2026-01-01T01:00:00Z" || ready["status"] != "True" {
		t.Errorf("Ready turned True: its time must move, got %v", ready)
	}
	if second["phase"] != "B" || second["observedGeneration"] != int64(3) || ready["observedGeneration"] != int64(3) {
		t.Errorf("status fields: %v", second)
	}
}

// seedPolicy loads a seed policy (policies/, typed by its CRD in crds/) and the input of its
// sample parent (samples/).
func seedPolicy(b *testing.B, name string) (*policy.Compiled, Input) {
	b.Helper()
	repo := filepath.Join("..", "..")
	m, err := kinds.LoadCRDFiles([]string{filepath.Join(repo, "crds", name+".yaml")})
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(repo, "policies", name+".yaml"))
	if err != nil {
		b.Fatal(err)
	}
	cs, err := policy.Load(name, data, m)
	if err != nil {
		b.Fatal(err)
	}
	sample, err := os.ReadFile(filepath.Join(repo, "samples", name+".yaml"))
	if err != nil {
		b.Fatal(err)
	}
	return cs[0], Input{Parent: obj(b, string(sample)), Mapper: m}
}

// BenchmarkRender renders the seed policies' samples, as the controller does on every sync.
func BenchmarkRender(b *testing.B) {
	for _, name := range []string{"myapp", "memcached"} {
		b.Run(name, func(b *testing.B) {
			c, in := seedPolicy(b, name)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Render(b.Context(), c, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestNewStatusDropsEmptyObjects(t *testing.T) {
	status, err := NewStatus(obj(t, testParent), map[string]any{
		"alb":   map[string]any{},
		"deep":  map[string]any{"inner": map[string]any{}},
		"kept":  map[string]any{"dns": "x"},
		"list":  []any{},
		"empty": "",
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"alb", "deep"} {
		if _, ok := status[gone]; ok {
			t.Errorf("status.%s must be dropped: %v", gone, status)
		}
	}
	for _, kept := range []string{"kept", "list", "empty"} {
		if _, ok := status[kept]; !ok {
			t.Errorf("status.%s must stay: %v", kept, status)
		}
	}
}

func TestConfinement(t *testing.T) {
	child := `  children:
    - id: cm
      crossNamespace: true
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: "${parent.spec.other}"}}
`
	consenting := func(name string) (map[string]string, bool) {
		return map[string]string{"example.com/share": "true"}, name == "elsewhere"
	}
	tests := []struct {
		name        string
		confinement string
		namespaces  NamespaceLabels
		want        string // "" when the child may be written
	}{
		{"no confinement: the parent's own namespace only", "", nil, "the policy reaches the parent's own namespace only"},
		{"named", "{childNamespaces: {names: [elsewhere]}}", nil, ""},
		{"any", `{childNamespaces: {names: ["*"]}}`, nil, ""},
		{"named by an expression over the parent", "{childNamespaces: {expression: \"[parent.spec.other]\"}}", nil, ""},
		{"not named", "{childNamespaces: {names: [other]}}", nil, "spec.confinement.childNamespaces does not name it"},
		{"consent missing", "{childNamespaces: {consentLabel: example.com/share}}", nil, `namespace "elsewhere" has not opted in: its owners label it example.com/share=true`},
		{"consent given", "{childNamespaces: {consentLabel: example.com/share}}", consenting, ""},
		{"named but without consent", "{childNamespaces: {names: [elsewhere], consentLabel: example.com/other}}", consenting, "has not opted in"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := child
			if tc.confinement != "" {
				body = "  confinement: " + tc.confinement + "\n" + child
			}
			_, err := Render(t.Context(), load(t, body), Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog(), Namespaces: tc.namespaces})
			var re *Error
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("render: %v, want the child", err)
			case tc.want != "" && (!errors.As(err, &re) || re.Reason != contract.ReasonNamespaceNotAllowed || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("render: %v, want %s saying %q", err, contract.ReasonNamespaceNotAllowed, tc.want)
			}
		})
	}
}

func TestRelatedReach(t *testing.T) {
	related := `  related:
    - {id: src, apiVersion: v1, resource: configmaps, namespace: "${parent.spec.other}", name: cfg}
`
	tests := []struct {
		name, confinement, want string
	}{
		{"another namespace without confinement", "", `spec.related.src: reads configmaps in namespace "elsewhere", which this MyApp may not reach`},
		{"another namespace allowed", "  confinement: {relatedNamespaces: {names: [elsewhere]}}\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.confinement+related)
			parent := obj(t, testParent)
			refs, err := Related(t.Context(), c, parent, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckRelatedReach(t.Context(), c, parent, refs, nil, expr.NewBudget())
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("reach: %v, want %q", err, tc.want)
			}
		})
	}
}

// A sync renders again with the children its writes returned; Rerender must return what that
// render returns, whether or not it can skip it.
func TestRerenderReturnsWhatARenderWould(t *testing.T) {
	child := `    - id: cm
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}, data: {app: "${parent.metadata.name}"}}
`
	tests := []struct {
		name          string
		body          string
		readsChildren bool
	}{
		{"no expression reads the children", "  children:\n" + child + "  status:\n    name: \"${parent.metadata.name}\"\n", false},
		{"readyWhen reads the child", "  children:\n" + child + "      readyWhen: \"has(child.data) && child.data.app == 'app'\"\n", false},
		{"readyWhen reads a variable", "  variables:\n    - name: want\n      expression: \"parent.metadata.name\"\n  children:\n" + child + "      readyWhen: \"has(child.data) && child.data.app == variables.want\"\n", false},
		{"the status reads the children", "  children:\n" + child + "  status:\n    found: \"${has(children.cm) ? 'yes' : 'no'}\"\n", true},
	}
	written := map[string][]*unstructured.Unstructured{"cm": {obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ns}, data: {app: app}}")}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.body)
			if c.ReadsChildren != tc.readsChildren {
				t.Fatalf("ReadsChildren = %v, want %v", c.ReadsChildren, tc.readsChildren)
			}
			in := Input{Parent: obj(t, testParent), Mapper: kinds.NewCatalog()}
			first, err := Render(t.Context(), c, in)
			if err != nil {
				t.Fatal(err)
			}
			in.Observed = written
			want, err := Render(t.Context(), c, in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Rerender(t.Context(), c, in, first)
			if err != nil {
				t.Fatal(err)
			}
			if first.Ready() || !want.Ready() {
				t.Fatalf("the first render is ready: %v, the second: %v; want false, then true", first.Ready(), want.Ready())
			}
			if !reflect.DeepEqual(got.Status, want.Status) || !reflect.DeepEqual(got.NotReady, want.NotReady) || len(got.Children) != len(want.Children) {
				t.Fatalf("Rerender: status %v, not ready %v, %d children; Render: %v, %v, %d", got.Status, got.NotReady, len(got.Children), want.Status, want.NotReady, len(want.Children))
			}
			for i := range got.Children {
				if !reflect.DeepEqual(got.Children[i].Object, want.Children[i].Object) || got.Children[i].Ready != want.Children[i].Ready {
					t.Errorf("child %d: %v (ready %v), want %v (ready %v)", i, got.Children[i].Object, got.Children[i].Ready, want.Children[i].Object, want.Children[i].Ready)
				}
			}
			if first.Children[0].Ready {
				t.Error("Rerender modified the last output")
			}
		})
	}
}

// A parent's number field holding a whole number (JSON's 2, decoded as an int) is read by the
// expressions as the double its schema types: string(parent.spec.ratio) failed every sync with
// "no such overload", the field typed double and the value an int.
func TestAParentsNumberFieldIsReadAsADouble(t *testing.T) {
	c := thingPolicy(t, `  children:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}"}
        data: {ratio: "${string(parent.spec.ratio)}", double: "${string(parent.spec.ratio * 2.0)}"}
`)
	parent := obj(t, "{apiVersion: example.com/v1, kind: Thing, metadata: {name: t, namespace: ns, uid: u-1}, spec: {ratio: 2}}")
	out, err := Render(t.Context(), c, Input{Parent: parent, Mapper: kinds.NewCatalog()})
	if err != nil {
		t.Fatal(err)
	}
	if data := out.Children[0].Object.Object["data"]; !reflect.DeepEqual(data, map[string]any{"ratio": "2", "double": "4"}) {
		t.Errorf("data %v, want ratio 2, double 4", data)
	}
	if _, isInt := parent.Object["spec"].(map[string]any)["ratio"].(int64); !isInt {
		t.Error("the parent given was modified")
	}
}

// A confinement's expression reads a parent's number field as a double too.
func TestAConfinementReadsAParentsNumberFieldAsADouble(t *testing.T) {
	c := thingPolicy(t, `  confinement:
    childNamespaces: {expression: "['tier-' + string(parent.spec.ratio)]"}
  children:
    - id: config
      crossNamespace: true
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}", namespace: tier-2}
`)
	parent := obj(t, "{apiVersion: example.com/v1, kind: Thing, metadata: {name: t, namespace: ns, uid: u-1}, spec: {ratio: 2}}")
	if _, err := Render(t.Context(), c, Input{Parent: parent, Mapper: kinds.NewCatalog()}); err != nil {
		t.Errorf("Render: %v, want the child in tier-2 allowed", err)
	}
}

// thingPolicy loads a policy whose parent, a Thing, has a number field spec.ratio, with the
// rest of its spec (children, confinement).
func thingPolicy(t *testing.T, rest string) *policy.Compiled {
	t.Helper()
	cs, err := policy.Load("p.yaml", []byte(`apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: things}
spec:
  parentResource: {apiVersion: example.com/v1, resource: things}
  parentSchema: {kind: Thing, spec: {ratio: number}}
  childResources: [{apiVersion: v1, resource: configmaps}]
`+rest), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	return cs[0]
}

// A parent's field whose name is no CEL identifier (a-b) is read under its escaped name, as the
// API server's CEL reads it (a__dash__b): the name was declared, the plain map held a-b, so the
// render failed, and has() and orValue read the field absent. The object is read as it is: no
// escaped key is added to it, which a child copying it whole would carry.
func TestAParentsFieldWithADashIsReadUnderItsEscapedName(t *testing.T) {
	cs, err := policy.Load("p.yaml", []byte(`apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: things}
spec:
  parentResource: {apiVersion: example.com/v1, resource: things}
  parentSchema: {kind: Thing, spec: {a-b: string}}
  childResources: [{apiVersion: v1, resource: configmaps}]
  children:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${parent.metadata.name}"}
        data:
          ab: "${parent.spec.a__dash__b}"
          present: "${string(has(parent.spec.a__dash__b))}"
          or: "${parent.spec.?a__dash__b.orValue('z')}"
          chained: "${parent.?spec.?a__dash__b.orValue('z')}"
`), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	parent := obj(t, "{apiVersion: example.com/v1, kind: Thing, metadata: {name: t, namespace: ns, uid: u-1}, spec: {a-b: x}}")
	out, err := Render(t.Context(), cs[0], Input{Parent: parent, Mapper: kinds.NewCatalog()})
	if err != nil {
		t.Fatal(err)
	}
	if data := out.Children[0].Object.Object["data"]; !reflect.DeepEqual(data, map[string]any{"ab": "x", "present": "true", "or": "x", "chained": "x"}) {
		t.Errorf("data %v, want the field read: x, true, x, x", data)
	}
}

// A child's or related object's number field (of a CRD's schema) holding a whole number is read
// as the double its schema types, as the parent's: string(children.g.spec.ratio) failed every
// sync with "no such overload", the field typed double and JSON's 2 an int.
func TestAChildsAndARelatedObjectsNumberFieldIsReadAsADouble(t *testing.T) {
	catalog := kinds.NewCatalog()
	catalog.AddCRD(&apiextensionsv1.CustomResourceDefinition{
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gauges", Singular: "gauge", Kind: "Gauge", ListKind: "GaugeList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"ratio": {Type: "number"}}},
				}}}}},
		},
	})
	cs, err := policy.Load("p.yaml", []byte(`apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: gauges}
spec:
  parentResource: {apiVersion: example.com/v1, resource: things}
  parentSchema: {kind: Thing, spec: {size: string}, status: {child: string, related: string}}
  childResources: [{apiVersion: example.com/v1, resource: gauges}]
  related:
    - {id: base, apiVersion: example.com/v1, resource: gauges, name: base}
  children:
    - id: g
      template:
        apiVersion: example.com/v1
        kind: Gauge
        metadata: {name: "${parent.metadata.name}"}
        spec: {ratio: 2}
      readyWhen: child.spec.ratio * 2.0 == 4.0
  status:
    child: "${string(children.?g.spec.ratio.orValue(0.0))}"
    related: "${string(related.?base.spec.ratio.orValue(0.0) * 3.0)}"
`), catalog)
	if err != nil {
		t.Fatal(err)
	}
	parent := obj(t, "{apiVersion: example.com/v1, kind: Thing, metadata: {name: p, namespace: ns, uid: u-1}}")
	in := Input{Parent: parent, Mapper: catalog, Related: map[string][]*unstructured.Unstructured{
		"base": {obj(t, "{apiVersion: example.com/v1, kind: Gauge, metadata: {name: base, namespace: ns}, spec: {ratio: 2}}")}}}
	first, err := Render(t.Context(), cs[0], in)
	if err != nil {
		t.Fatal(err)
	}
	child := first.Children[0].Object.DeepCopy() // as the API server returns it: 2 decoded as an int
	child.Object["spec"] = map[string]any{"ratio": int64(2)}
	out, _, err := RenderObserved(t.Context(), cs[0], in, []*unstructured.Unstructured{child})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Children[0].Ready {
		t.Errorf("the child is not ready: %s", out.Children[0].NotReadyBecause)
	}
	if got := map[string]any{"child": out.Status["child"], "related": out.Status["related"]}; !reflect.DeepEqual(got, map[string]any{"child": "2", "related": "6"}) {
		t.Errorf("status %v, want child 2, related 6", got)
	}
	for _, o := range []*unstructured.Unstructured{child, in.Related["base"][0]} {
		if _, isInt := o.Object["spec"].(map[string]any)["ratio"].(int64); !isInt {
			t.Error("an object given was modified")
		}
	}
}

// A child of the parent's kind, namespace and name is the parent itself: every sync found its name
// taken (ChildConflict, for ever). The render says so; in another namespace, it is a child.
func TestAChildThatIsTheParentItselfIsInvalid(t *testing.T) {
	text := `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: mirror}
spec:
  parentResource: {apiVersion: v1, resource: configmaps}
  childResources: [{apiVersion: v1, resource: configmaps}]
  confinement: {childNamespaces: {names: ["*"]}}
  children:
    - id: copy
      crossNamespace: true
      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: "${parent.metadata.name}", namespace: "${parent.data.to}"}}
`
	cs, err := policy.Load("p.yaml", []byte(text), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ to, want string }{{"ns", "the child ConfigMap ns/cm is the parent itself"}, {"other", ""}} {
		parent := obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: ns, uid: u-1}, data: {to: "+tc.to+"}}")
		_, err := Render(t.Context(), cs[0], Input{Parent: parent, Mapper: kinds.NewCatalog()})
		var re *Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("to %s: %v, want no error", tc.to, err)
		case tc.want != "" && (!errors.As(err, &re) || re.Reason != contract.ReasonInvalidChild || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("to %s: %v, want InvalidChild saying %q", tc.to, err, tc.want)
		}
	}
}
