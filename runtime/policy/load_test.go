package policy

import (
	"path/filepath"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/test/testpolicies"
)

// header is a policy's head: MyApps (crds/myapp.yaml) with Pod children.
var header = testpolicies.YAML("myapp-head", testpolicies.Fills{"RESOURCE": "pods"})

// children is a valid child entry; header has 11 lines, so children starts at line 12.
const children = `  children:
    - id: pod
      template:
        apiVersion: v1
        kind: Pod
        metadata:
          name: "${parent.metadata.name}"
`

func TestLoadErrors(t *testing.T) {
	myappCRD := mapper(t, "myapp")
	tests := []struct {
		name   string
		policy string
		mapper kinds.Mapper
		want   string // file:line: path: message (a prefix of the message is enough)
	}{
		{"bad YAML", header + "  children: [\n", nil,
			"p.yaml:12:13: invalid YAML: did not find expected node content"},
		{"unknown field with a suggestion", header + "  chidren: []\n", nil,
			`p.yaml:12: spec.chidren: unknown field "chidren" (did you mean "children"?)`},
		{"wrong type", header + "  resyncPeriodSeconds: soon\n", nil,
			`p.yaml:12: spec.resyncPeriodSeconds: expected an integer, got a string "soon"`},
		{"unquoted boolean expression", header + children + "      includeWhen: true\n", nil,
			`p.yaml:19: spec.children[0].includeWhen: expected a string, got a boolean (quote it: "true")`},
		{"duplicate key", header + "  childResources: []\n", nil,
			`p.yaml:12: spec.childResources: duplicate key "childResources" (first at line 9)`},
		{"missing required field", strings.Replace(header, "    resource: myapps\n", "", 1), nil,
			"p.yaml:6: spec.parentResource.resource: is required"},
		{"duplicate child id", header + children + "    - id: pod\n      expression: \"[]\"\n", nil,
			`p.yaml:19: spec.children[1].id: duplicate id "pod" (first used at spec.children[0].id)`},
		{"a policy named true, which its children's labels would make policies", strings.Replace(header, "name: test", `name: "true"`, 1) + children, nil,
			`p.yaml:4: metadata.name: a policy may not be named "true"`},
		{"bad CEL syntax", header + children + "      includeWhen: \"parent.spec.(\"\n", nil,
			`p.yaml:19: spec.children[0].includeWhen: compile "parent.spec.(": Syntax error`},
		{"type error against the CRD schema", header + children + "      includeWhen: \"parent.spec.imgae == ''\"\n", myappCRD,
			`p.yaml:19: spec.children[0].includeWhen: compile "parent.spec.imgae == ''": undefined field 'imgae'`},
		{"unknown variable", header + "  variables:\n    - name: a\n      expression: \"1\"\n" + children + "      includeWhen: \"variables.b == 1\"\n", nil,
			`p.yaml:22: spec.children[0].includeWhen: compile "variables.b == 1": undefined field 'b'`},
		{"expression returning the wrong type", header + children + "      includeWhen: \"'yes'\"\n", nil,
			`p.yaml:19: spec.children[0].includeWhen: "'yes'" must return a bool, but returns string`},
		{"includeWhen of a string says to compare it", header + children + "      includeWhen: \"parent.metadata.name\"\n", myappCRD,
			`p.yaml:19: spec.children[0].includeWhen: "parent.metadata.name" must return a bool, but returns string: compare it with ==, e.g. "parent.metadata.name == 'yes'"`},
		{"forEach over a non-list", header + children + "      forEach: \"parent.metadata.name\"\n", myappCRD,
			`p.yaml:19: spec.children[0].forEach: "parent.metadata.name" must return a list, but returns string: split it, e.g. "parent.metadata.name.split(',')"`},
		{"forEach over an object names its lists", header + children + "      forEach: \"parent.metadata\"\n", myappCRD,
			`p.yaml:19: spec.children[0].forEach: "parent.metadata" must return a list, but returns metacel.parent.metadata: did you mean one of "parent.metadata.finalizers", "parent.metadata.managedFields", "parent.metadata.ownerReferences"?`},
		{"cost over the limit", header + children + "      includeWhen: \"parent.metadata.labels.all(a, parent.metadata.labels.all(b, parent.metadata.labels.all(c, a != b)))\"\n", nil,
			`p.yaml:19: spec.children[0].includeWhen: "parent.metadata.labels.all(a, `},
		{"child kind not allowed", strings.Replace(header+children, "kind: Pod", "kind: Service", 1), nil,
			`p.yaml:16: spec.children[0].template.kind: v1 Service (resource "services") is not listed in spec.childResources`},
		// the resource guessed from the kind lowercased exists: the policy passed, and every write was refused
		{"a child kind in the wrong case", strings.Replace(header+children, "kind: Pod", "kind: POD", 1), nil,
			`p.yaml:16: spec.children[0].template.kind: v1 pods holds objects of kind "Pod", not "POD": write kind: Pod`},
		// the fix said to list a resource no CRD can define in a group of Kubernetes' own
		{"a misspelt kind of a Kubernetes group", strings.Replace(header+children, "kind: Pod", "kind: Podd", 1), nil,
			`p.yaml:16: spec.children[0].template.kind: the Kubernetes group "core" has no kind "Podd" (did you mean "Pod"?)`},
		{"template expression in a ConfigMap keeps the file's lines", configMap(header + children + "      readyWhen: \"child.oops(\"\n"), nil,
			`p.yaml:25: spec.children[0].readyWhen: compile "child.oops(": Syntax error`},
		{"parent version the CRD does not serve", strings.Replace(header, "demo.rtfm.co.ua/v1\n", "demo.rtfm.co.ua/v2\n", 1), myappCRD,
			`p.yaml:7: spec.parentResource.apiVersion: myapps.demo.rtfm.co.ua is served as demo.rtfm.co.ua/v1, not demo.rtfm.co.ua/v2: use one of those`},
		{"child version not served", strings.Replace(header, "    - apiVersion: v1\n      resource: pods", "    - apiVersion: v2\n      resource: pods", 1), nil,
			`p.yaml:10: spec.childResources[0].apiVersion: pods is served as v1, not v2`},
		{"a child version Kubernetes removed (client-go still knows it)", strings.Replace(header, "    - apiVersion: v1\n      resource: pods", "    - apiVersion: batch/v1beta1\n      resource: cronjobs", 1), nil,
			`p.yaml:10: spec.childResources[0].apiVersion: cronjobs.batch is served as batch/v1, not batch/v1beta1`},
		{"a child of the group extensions", strings.Replace(header, "    - apiVersion: v1\n      resource: pods", "    - apiVersion: extensions/v1beta1\n      resource: ingresses", 1), nil,
			`p.yaml:10: spec.childResources[0].apiVersion: extensions/v1beta1 is no longer served (Kubernetes removed the group extensions in 1.22): use networking.k8s.io/v1`},
		{"an id CEL's grammar reserves", strings.Replace(header+children, "- id: pod", "- id: in", 1), nil,
			`p.yaml:13: spec.children[0].id: "in" is a word of CEL's grammar and cannot be a field name`},
		{"an id no label value can be, which every child carries", strings.Replace(header+children, "- id: pod", "- id: pod_", 1), nil,
			`p.yaml:13: spec.children[0].id: "pod_" cannot be the value of the label metacel.dev/child-id that every child carries`},
		{"not a policy", "apiVersion: v1\nkind: Pod\n", nil,
			`p.yaml:1: expected apiVersion "metacel.dev/v1alpha1" and kind "CompositePolicy"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.mapper
			if m == nil {
				m = kinds.NewCatalog()
			}
			_, err := Load("p.yaml", []byte(tc.policy), m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

// configMap wraps a policy into a ConfigMap's data value, as policies/*.yaml are written.
func configMap(p string) string {
	indented := "    " + strings.ReplaceAll(strings.TrimSuffix(p, "\n"), "\n", "\n    ") + "\n"
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p\ndata:\n  p.yaml: |\n" + indented
}

func TestKeywordIDsLoad(t *testing.T) {
	p := strings.Replace(header+children, "- id: pod", "- id: namespace", 1) +
		"  status:\n    pod: \"${children.?namespace.?metadata.?name.orValue('')}\"\n"
	if _, err := Load("p.yaml", []byte(p), kinds.NewCatalog()); err != nil {
		t.Fatalf("a child id that is a CEL keyword (not a grammar token) must load: %v", err)
	}
}

func TestLoadSeveralDocuments(t *testing.T) {
	second := strings.Replace(header, "name: test", "name: second", 1)
	docs, err := Load("p.yaml", []byte(header+children+"---\n"+second), kinds.NewCatalog())
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].Name() != "test" || docs[1].Name() != "second" {
		t.Fatalf("want policies test and second, got %v", docs)
	}
	if line := docs[1].Source.LineOf("spec.parentResource.resource"); line != 27 {
		t.Errorf("line of the second document's field: got %d, want 27", line)
	}
}

func mapper(t *testing.T, crd string) kinds.Mapper {
	t.Helper()
	m, err := kinds.LoadCRDFiles([]string{filepath.Join("..", "..", "crds", crd+".yaml")})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(header + children))
	f.Add([]byte(configMap(header + children)))
	f.Add([]byte("a: [\n"))
	f.Add([]byte("---\n--- &a\nb: *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, _ := Parse("fuzz.yaml", data)
		for _, d := range docs {
			_ = Validate(d)
		}
	})
}

func TestAliasesAreBounded(t *testing.T) {
	tests := map[string]string{
		"self-referencing anchor": "apiVersion: metacel.dev/v1alpha1\nkind: CompositePolicy\nmetadata: {name: x}\nspec:\n  status: &a {x: [*a]}\n",
		"billion laughs": "apiVersion: metacel.dev/v1alpha1\nkind: CompositePolicy\nmetadata: {name: x}\nspec:\n  status:\n" +
			"    a: &a [x, x, x, x, x, x, x, x, x, x]\n    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" +
			"    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n" +
			"    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n    f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(doc))
			if err == nil || !strings.Contains(err.Error(), "too deep or too large") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// Two template children naming one object literally fail every render ("two children are the same
// object"): a load error at the second one's name. Names that differ, or that templates compute,
// load.
func TestTwoChildrenNamingOneObjectDoNotLoad(t *testing.T) {
	child := func(id, name string) string {
		return "    - id: " + id + "\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: " + name + "}}\n"
	}
	tests := []struct {
		name, children, want string
	}{
		{"one literal name twice", child("a", "shared") + child("b", "shared"), `p.yaml:16: spec.children[1].template.metadata.name: names the same object as spec.children[0]`},
		{"two literal names", child("a", "one") + child("b", "two"), ""},
		{"one name computed", child("a", "shared") + child("b", `"${parent.metadata.name}"`), ""},
		{"one literal name twice, kept apart by includeWhen", child("a", "shared") + "      includeWhen: \"parent.metadata.name == 'x'\"\n" +
			child("b", "shared") + "      includeWhen: \"parent.metadata.name != 'x'\"\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := testpolicies.YAML("myapp-head", testpolicies.Fills{"RESOURCE": "configmaps"}) + "  children:\n" + tc.children
			_, err := Load("p.yaml", []byte(text), kinds.NewCatalog())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("load: %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("load: %v\nwant: %s", err, tc.want)
			}
		})
	}
}
