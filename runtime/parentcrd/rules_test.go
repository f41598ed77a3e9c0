package parentcrd_test

import (
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

func TestRulesFormatsAndImmutableFieldsBecomeTheCRDs(t *testing.T) {
	tests := []struct {
		name, spec string // spec is declared as spec.parentSchema.spec
		want       string // the schema of spec, as YAML
	}{
		{"a field's rules", "{hosts: {type: array, maxItems: 5, items: string, x-kubernetes-validations: [{rule: 'self.all(h, h.endsWith(\".com\"))', message: under .com}]}}",
			`{type: object, properties: {hosts: {type: array, maxItems: 5, items: {type: string, maxLength: 1024},
			  x-kubernetes-validations: [{rule: 'self.all(h, h.endsWith(".com"))', message: under .com}]}}}`},
		{"a format", "{contact: {type: string, format: email}, size: {type: integer, format: int32}}",
			"{type: object, properties: {contact: {type: string, format: email, maxLength: 1024}, size: {type: integer, format: int32}}}"},
		{"an optional immutable field keeps its value, and stays set or unset", "{region: {type: string, immutable: true}}",
			`{type: object, properties: {region: {type: string, maxLength: 1024,
			  x-kubernetes-validations: [{rule: self == oldSelf, message: 'is immutable: it cannot change once the Website is created'}]}},
			 x-kubernetes-validations: [{rule: has(self.region) == has(oldSelf.region), fieldPath: .region,
			  message: 'is immutable: it cannot be set or removed once the Website is created'}]}`},
		{"an immutable field with a default is always there", "{zone: {type: string, immutable: true, default: a}}",
			`{type: object, default: {}, properties: {zone: {type: string, maxLength: 1024, default: a,
			  x-kubernetes-validations: [{rule: self == oldSelf, message: 'is immutable: it cannot change once the Website is created'}]}}}`},
		{"a required immutable field too", "{zone: {type: string, immutable: true, required: true}}",
			`{type: object, required: [zone], properties: {zone: {type: string, maxLength: 1024,
			  x-kubernetes-validations: [{rule: self == oldSelf, message: 'is immutable: it cannot change once the Website is created'}]}}}`},
		{"immutable: false is no rule", "{zone: {type: string, immutable: false}}",
			"{type: object, properties: {zone: {type: string, maxLength: 1024}}}"},
		{"an immutable field of a nested object, after the object's own rules", `{tls: {properties: {issuer: {type: string, immutable: true}},
			x-kubernetes-validations: [{rule: "has(self.issuer)"}]}}`,
			`{type: object, properties: {tls: {type: object, properties: {issuer: {type: string, maxLength: 1024,
			  x-kubernetes-validations: [{rule: self == oldSelf, message: 'is immutable: it cannot change once the Website is created'}]}},
			  x-kubernetes-validations: [{rule: has(self.issuer)}, {rule: has(self.issuer) == has(oldSelf.issuer), fieldPath: .issuer,
			   message: 'is immutable: it cannot be set or removed once the Website is created'}]}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crd := parentCRD(t, declaring+"    spec: "+tc.spec+"\n")
			structural(t, rootSchema(crd))
			got := rootSchema(crd).Properties["spec"]
			got.Description = ""
			if canonical(t, got) != canonical(t, tc.want) {
				t.Errorf("spec is\n%s\nwant\n%s", canonical(t, got), canonical(t, tc.want))
			}
		})
	}
}

func TestRulesOfTheWholeParentAndPrinterColumns(t *testing.T) {
	crd := parentCRD(t, declaring+`    x-kubernetes-validations:
      - {rule: "self.spec.min <= self.spec.max", message: min must not exceed max}
    printerColumns:
      - {name: Min, jsonPath: .spec.min}
      - {name: Region, jsonPath: .spec.region, priority: 1, description: Where it runs.}
      - {name: Since, jsonPath: .spec.since}
      - {name: Owner, jsonPath: .metadata.labels.owner}
      - {name: Hosts, jsonPath: .spec.hosts, type: string}
    spec:
      min: {type: integer, default: 1}
      max: {type: integer, default: 3}
      region: string
      since: {type: string, format: date-time}
      hosts: {type: array, items: string}
`)
	if got, want := canonical(t, rootSchema(crd).XValidations), canonical(t, "[{rule: self.spec.min <= self.spec.max, message: min must not exceed max}]"); got != want {
		t.Errorf("the root's rules are %s, want %s", got, want)
	}
	want := `[{name: Min, type: integer, jsonPath: .spec.min}, {name: Region, type: string, jsonPath: .spec.region, priority: 1, description: Where it runs.},
	  {name: Since, type: date, jsonPath: .spec.since}, {name: Owner, type: string, jsonPath: .metadata.labels.owner},
	  {name: Hosts, type: string, jsonPath: .spec.hosts},
	  {name: Synced, type: string, jsonPath: '.status.conditions[?(@.type=="Synced")].status'},
	  {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'},
	  {name: Age, type: date, jsonPath: .metadata.creationTimestamp}]`
	if got := canonical(t, crd.Spec.Versions[0].AdditionalPrinterColumns); got != canonical(t, want) {
		t.Errorf("the columns are\n%s\nwant\n%s", got, canonical(t, want))
	}
}

// dearLists are four lists whose items have four rules each, each rule within the API server's
// limit of one (8,000,400 of 10,000,000), all of them over the limit of a schema's.
var dearLists = func() string {
	var b strings.Builder
	for _, name := range []string{"a", "b", "c", "d"} {
		b.WriteString("      " + name + ": {type: array, maxItems: 200, items: {type: string, maxLength: 100000, x-kubernetes-validations: [")
		b.WriteString(strings.TrimSuffix(strings.Repeat(`{rule: "self.matches('^a+$')"}, `, 4), ", "))
		b.WriteString("]}}\n")
	}
	return b.String()
}()

func TestAMistakenRuleFormatOrColumnIsAnErrorAtItsLine(t *testing.T) {
	tests := []struct {
		name, decl string // decl follows line 8
		want       string
	}{
		{"a misspelt field in a rule", "    x-kubernetes-validations: [{rule: 'self.spec.replcas > 0'}]\n    spec: {replicas: integer}\n",
			`p.yaml:9: spec.parentSchema["x-kubernetes-validations"][0].rule: the API server refuses the rule: undefined field 'replcas' (did you mean "replicas"?) (column 10 of the rule)`},
		{"a misspelt self", "    spec:\n      n: {type: integer, x-kubernetes-validations: [{rule: 'slef > 0'}]}\n",
			`p.yaml:10: spec.parentSchema.spec.n["x-kubernetes-validations"][0].rule: the API server refuses the rule: undeclared reference to 'slef' (did you mean "self"?) (column 1 of the rule)`},
		{"a rule that is no bool", "    spec:\n      n:\n        type: integer\n        x-kubernetes-validations:\n          - rule: self + 1\n",
			`p.yaml:13: spec.parentSchema.spec.n["x-kubernetes-validations"][0].rule: the API server refuses the rule: cel expression must evaluate to a bool: a rule is true when the value is valid: compare`},
		{"a rule too dear for its list", "    spec:\n      names:\n        type: array\n        maxItems: 1000\n        items: {type: string, maxLength: 100000, x-kubernetes-validations: [{rule: \"self.matches('^a+$')\"}]}\n",
			`p.yaml:13: spec.parentSchema.spec.names.items["x-kubernetes-validations"][0].rule: the API server refuses the rule: its estimated cost 40002000 (times the items of the lists and maps around it) is over the limit of 10000000 per rule`},
		{"rules too dear together, each within its limit", "    spec:\n" + dearLists,
			`p.yaml:7: spec.parentSchema: the API server refuses it: the estimated cost of all the rules, 128006400, is over the limit of 100000000 for a whole schema`},
		{"oldSelf in a list's items", "    spec:\n      hosts:\n        type: array\n        items: {type: string, x-kubernetes-validations: [{rule: self == oldSelf}]}\n",
			`p.yaml:12: spec.parentSchema.spec.hosts.items["x-kubernetes-validations"][0].rule: the API server refuses the rule: oldSelf (and immutable) cannot be used inside the items of the list spec.parentSchema.spec.hosts`},
		{"an immutable field in a list's items, once", "    spec:\n      hosts:\n        items:\n          properties:\n            name: {type: string, immutable: true}\n",
			`p.yaml:13: spec.parentSchema.spec.hosts.items.properties.name.immutable: the API server refuses the rule: oldSelf (and immutable) cannot be used inside the items of the list spec.parentSchema.spec.hosts, where the API server cannot tell which old item is which: put the rule on spec.parentSchema.spec.hosts itself`},
		{"a message of two lines", "    spec:\n      n: {type: integer, x-kubernetes-validations: [{rule: self > 0, message: \"one\\ntwo\"}]}\n",
			`p.yaml:10: spec.parentSchema.spec.n["x-kubernetes-validations"][0].message: the API server refuses the rule: a message must be one line`},
		{"a misspelt key of a rule", "    spec:\n      n: {type: integer, x-kubernetes-validations: [{rule: self > 0, mesage: positive}]}\n",
			`p.yaml:10: spec.parentSchema.spec.n["x-kubernetes-validations"][0].mesage: unknown key "mesage" (did you mean "message"?)`},
		{"a rule without its expression", "    spec:\n      n: {type: integer, x-kubernetes-validations: [{message: positive}]}\n",
			`p.yaml:10: spec.parentSchema.spec.n["x-kubernetes-validations"][0].rule: a rule needs its CEL expression`},
		{"rules that are no list", "    spec:\n      n: {type: integer, x-kubernetes-validations: {rule: self > 0}}\n",
			`p.yaml:10: spec.parentSchema.spec.n["x-kubernetes-validations"]: expected a list of rules`},
		{"a misspelt key of a rule of the parent", "    x-kubernetes-validations: [{rul: 'true'}]\n",
			`p.yaml:9: spec.parentSchema["x-kubernetes-validations"][0].rul: unknown field "rul" (did you mean "rule"?)`},
		{"immutable that is no boolean", "    spec:\n      n: {type: integer, immutable: yes}\n",
			`p.yaml:10: spec.parentSchema.spec.n.immutable: expected true or false, got a string "yes"`},
		{"an unknown format", "    spec:\n      contact: {type: string, format: emial}\n",
			`p.yaml:10: spec.parentSchema.spec.contact.format: unknown format "emial" for a string (did you mean "email"?): the API server checks bsonobjectid, byte,`},
		{"a format of another type", "    spec:\n      n: {type: integer, format: date-time}\n",
			`p.yaml:10: spec.parentSchema.spec.n.format: unknown format "date-time" for an integer: the API server checks int32, int64`},
		{"a format on a boolean", "    spec:\n      on: {type: boolean, format: int32}\n",
			`p.yaml:10: spec.parentSchema.spec.on.format: format applies to fields of type string, integer or number, not to this boolean`},
		{"a default the format refuses", "    spec:\n      contact: {type: string, format: email, default: nobody}\n",
			`p.yaml:10: spec.parentSchema.spec.contact.default: the API server refuses it: Invalid value: "nobody": must be of type email`},
		{"a default its rule refuses", "    spec:\n      n: {type: integer, default: 0, x-kubernetes-validations: [{rule: self > 0, message: must be positive}]}\n",
			`p.yaml:10: spec.parentSchema.spec.n.default: the API server refuses it: Invalid value: 0: must be positive`},
		{"a column of an undeclared field", "    printerColumns: [{name: Replicas, jsonPath: .spec.replcas}]\n    spec: {replicas: integer}\n",
			`p.yaml:9: spec.parentSchema.printerColumns[0].jsonPath: ".spec.replcas" names no declared field: .spec has no field "replcas" (did you mean "replicas"?)`},
		{"a column named as metacel's", "    printerColumns: [{name: ready, jsonPath: .spec.on}]\n    spec: {on: boolean}\n",
			`p.yaml:9: spec.parentSchema.printerColumns[0].name: "ready" is metacel's column Ready already: give the column another name`},
		{"two columns of one name", "    printerColumns: [{name: On, jsonPath: .spec.on}, {name: On, jsonPath: .spec.on}]\n    spec: {on: boolean}\n",
			`p.yaml:9: spec.parentSchema.printerColumns[1].name: "On" is the column at printerColumns[0] already`},
		{"a column's unknown type", "    printerColumns: [{name: On, jsonPath: .spec.on, type: bool}]\n    spec: {on: boolean}\n",
			`p.yaml:9: spec.parentSchema.printerColumns[0].type: unknown column type "bool": one of integer, number, string, boolean, date`},
		{"a column of a list without its type", "    printerColumns: [{name: Hosts, jsonPath: .spec.hosts}]\n    spec: {hosts: {items: string}}\n",
			`p.yaml:9: spec.parentSchema.printerColumns[0]: type is required: .spec.hosts is an array, which no column type is`},
		{"a column kubectl cannot read", "    printerColumns: [{name: X, jsonPath: '.spec.hosts[?(@.a'}]\n",
			`p.yaml:9: spec.parentSchema.printerColumns[0].jsonPath: ".spec.hosts[?(@.a" is not a JSONPath kubectl can read`},
		{"a column without the leading dot", "    printerColumns: [{name: X, jsonPath: spec.x, type: string}]\n",
			`p.yaml:9: spec.parentSchema.printerColumns[0].jsonPath: "spec.x" is not a path from the parent's root: write it with a leading dot`},
		{"a column of a field inside a scalar", "    printerColumns: [{name: X, jsonPath: .spec.on.x}]\n    spec: {on: boolean}\n",
			`p.yaml:9: spec.parentSchema.printerColumns[0].jsonPath: ".spec.on.x" names a field of .spec.on, which is a boolean`},
		{"a negative priority", "    printerColumns: [{name: X, jsonPath: .metadata.name, priority: -1}]\n",
			`p.yaml:9: spec.parentSchema.printerColumns[0].priority: expected 0 (shown by kubectl get) or more (shown with -o wide), got -1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := loadDeclaration(declaring + tc.decl)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got\n%v\nwant an error containing\n%s", err, tc.want)
			}
			if n := strings.Count(err.Error(), tc.want); n != 1 {
				t.Errorf("the error is reported %d times:\n%v", n, err)
			}
		})
	}
}

// TestAnImmutableFieldKeepsItsValueOnUpdate runs the rules immutable stands for as the API server
// runs them on an update, with its code.
func TestAnImmutableFieldKeepsItsValueOnUpdate(t *testing.T) {
	crd := parentCRD(t, declaring+"    spec:\n      region: {type: string, immutable: true}\n      zone: {type: string, immutable: true, default: a}\n      size: integer\n")
	s := structural(t, rootSchema(crd))
	rules := cel.NewValidator(s, true, celconfig.PerCallLimit)
	tests := []struct {
		name, old, new string
		want           string // the error, "" for none
	}{
		{"unchanged", "{region: eu, zone: a}", "{region: eu, zone: a, size: 2}", ""},
		{"changed", "{region: eu, zone: a}", "{region: us, zone: a}", `spec.region: Invalid value: "us": is immutable: it cannot change once the Website is created`},
		{"set after create", "{zone: a}", "{region: eu, zone: a}", `spec.region: Invalid value: is immutable: it cannot be set or removed once the Website is created`},
		{"removed", "{region: eu, zone: a}", "{zone: a}", `spec.region: Invalid value: is immutable: it cannot be set or removed once the Website is created`},
		{"a defaulted field changed", "{zone: a}", "{zone: b}", `spec.zone: Invalid value: "b": is immutable`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			object := func(spec string) map[string]any {
				var obj map[string]any
				if err := yaml.Unmarshal([]byte("{apiVersion: example.com/v1, kind: Website, metadata: {name: w}, spec: "+spec+"}"), &obj); err != nil {
					t.Fatal(err)
				}
				return obj
			}
			errs, _ := rules.Validate(t.Context(), nil, s, object(tc.new), object(tc.old), celconfig.RuntimeCELCostBudget)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("refused: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("got %v, want %q", got, tc.want)
			}
		})
	}
}

// TestAnObjectIsDefaultedToEmptyOnlyWhereItsRulesAcceptIt: an object whose fields have defaults
// defaults to {} so that they apply when it is left out, but not when its own rules refuse {}:
// the API server checks a default against them, and refused the CRD for a default the author
// never wrote ("limits.default: ... no such key: min").
func TestAnObjectIsDefaultedToEmptyOnlyWhereItsRulesAcceptIt(t *testing.T) {
	tests := []struct {
		name, rule  string
		wantDefault bool
	}{
		{"without rules", "", true},
		{"with a rule {} passes", `x-kubernetes-validations: [{rule: "!has(self.max) || self.min <= self.max"}]`, true},
		{"with a rule {} fails", `x-kubernetes-validations: [{rule: "self.min <= self.max", message: "min must not exceed max"}]`, false},
		{"with a field named kind, read as the object's own field", `x-kubernetes-validations: [{rule: "!has(self.max) || self.kind <= self.max"}]`, true},
		{"with a transition rule {} fails (the API server checks a default with itself as oldSelf)", `x-kubernetes-validations: [{rule: "self.min == oldSelf.min"}]`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limits := "{type: object, properties: {min: {type: integer, default: 1}, kind: {type: integer, default: 1}, max: integer}"
			if tc.rule != "" {
				limits += ", " + tc.rule
			}
			crd := parentCRD(t, declaring+"    spec:\n      limits: "+limits+"}\n")
			got := rootSchema(crd).Properties["spec"].Properties["limits"].Default != nil
			if got != tc.wantDefault {
				t.Errorf("limits defaults to {}: %v, want %v", got, tc.wantDefault)
			}
		})
	}
}
