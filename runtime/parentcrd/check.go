package parentcrd

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	utilptr "k8s.io/utils/ptr"

	"metacel.dev/metacel/runtime/fieldpath"
)

// The API server's limits on the estimated cost of a CRD's rules, as
// k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation states them (that package
// is not imported: it brings the API server's webhook client, gRPC and OpenTelemetry with it,
// for a check of conversion webhooks a parent's CRD never has).
const (
	// ruleCostLimit is the limit of one rule, its estimated cost times the number of times it
	// may run (the bounds of the lists and maps around it).
	ruleCostLimit = 10_000_000
	// schemaCostLimit is the limit of every rule of the schema together.
	schemaCostLimit = 100_000_000
)

// ruleCheck checks the CEL rules (x-kubernetes-validations) of a structural schema as the API
// server checks them when it is asked to create the CRD, with the API server's own compilation
// (apiextensions-apiserver's schema/cel.Compile, against the type of the schema the rules are
// on): each must type-check and return a bool; its estimated cost, times the number of times it
// may run, must fit ruleCostLimit, and all of them together schemaCostLimit; oldSelf is refused
// inside a list's items, where the API server cannot correlate the old value; a message is one
// line, and a rule of several lines needs one.
type ruleCheck struct {
	b    *schemaBuilder
	root *apiextensionsv1.JSONSchemaProps
	// names are the field names of the schema, for what a misspelt one meant (propertyNames,
	// read at the first misspelling).
	names []string
	total uint64
	// expensive are the rules that count for 1% of schemaCostLimit or more, with their cost.
	expensive []ruleCost
}

type ruleCost struct {
	at   *field.Path
	cost uint64
}

// checkRules checks every rule of the schema s (at openAPIV3Schema).
func (b *schemaBuilder) checkRules(at *field.Path, s *structuralschema.Structural, root *apiextensionsv1.JSONSchemaProps) {
	c := &ruleCheck{b: b, root: root}
	one := uint64(1)
	c.walk(at, s, true, &one, nil)
	if c.total > schemaCostLimit {
		for _, e := range c.expensive {
			b.errorf(b.policyPath(e.at.String()), "the API server refuses it: its estimated cost %d counts for much of the total of the schema's rules, over the limit", e.cost)
		}
		b.errorf(b.base, "the API server refuses it: the estimated cost of all the rules, %d, is over the limit of %d for a whole schema: simplify the rules, or bound the lists, maps and strings they walk (maxItems, maxProperties, maxLength)", c.total, schemaCostLimit)
	}
}

// walk checks the rules of s and of the schemas below it. cardinality is how many times a rule
// of s may run (nil: unbounded), uncorrelated where oldSelf may not be used (nil: anywhere).
func (c *ruleCheck) walk(at *field.Path, s *structuralschema.Structural, isRoot bool, cardinality *uint64, uncorrelated *field.Path) {
	if len(s.XValidations) > 0 {
		c.check(at, s, isRoot, cardinality, uncorrelated)
	}
	inner := innerCardinality(s, cardinality)
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		u := uncorrelated
		if u == nil && !cel.MapIsCorrelatable(s.XMapType) {
			u = at
		}
		c.walk(at.Child("properties").Key(name), &p, false, inner, u)
	}
	if s.Items != nil {
		u := uncorrelated
		if u == nil && (s.XListType == nil || *s.XListType != "map") {
			u = at
		}
		c.walk(at.Child("items"), s.Items, false, inner, u)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		c.walk(at.Child("additionalProperties"), s.AdditionalProperties.Structural, false, inner, uncorrelated)
	}
}

// innerCardinality is how many times a rule below s may run: the times s's may, times the items
// of a list or the values of a map.
func innerCardinality(s *structuralschema.Structural, cardinality *uint64) *uint64 {
	var bound *int64
	switch {
	case s.Type == "array":
		bound = maxOf(s, func(v *structuralschema.ValueValidation) *int64 { return v.MaxItems })
	case s.Type == "object" && s.AdditionalProperties != nil:
		bound = maxOf(s, func(v *structuralschema.ValueValidation) *int64 { return v.MaxProperties })
	default:
		bound = utilptr.To[int64](1)
	}
	if cardinality == nil || bound == nil {
		return nil
	}
	n := times(*cardinality, uint64(max(*bound, 0)))
	return &n
}

func maxOf(s *structuralschema.Structural, bound func(*structuralschema.ValueValidation) *int64) *int64 {
	if s.ValueValidation == nil {
		return nil
	}
	return bound(s.ValueValidation)
}

// times multiplies, saturating at the largest uint64.
func times(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

// check compiles the rules of s and checks each.
func (c *ruleCheck) check(at *field.Path, s *structuralschema.Structural, isRoot bool, cardinality *uint64, uncorrelated *field.Path) {
	for i, r := range s.XValidations {
		c.checkText(ruleAt(at, i), r)
	}
	// the API server's environment of new expressions, built once by the first policy with rules
	envs := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	results, err := cel.Compile(s, model.SchemaDeclType(s, isRoot), celconfig.PerCallLimit, envs, cel.NewExpressionsEnvLoader())
	if err != nil {
		c.refuse(at.Child(rulesKey), "%v", err)
		return
	}
	for i, r := range results {
		ruleAt := ruleAt(at, i)
		if r.Error != nil {
			c.refuse(ruleAt.Child("rule"), "%s", c.explain(r.Error.Detail)+notBool(r.Error.Detail))
			continue
		}
		overLimit := false
		cost := r.MaxCost
		if cardinality != nil {
			cost = times(cost, *cardinality)
		} else {
			cost = times(cost, r.MaxCardinality)
		}
		if cost > ruleCostLimit {
			overLimit = true
			c.refuse(ruleAt.Child("rule"), "its estimated cost %d (times the items of the lists and maps around it) is over the limit of %d per rule: "+
				"simplify it, or bound the lists, maps and strings it walks (maxItems, maxProperties, maxLength)", cost, ruleCostLimit)
		}
		c.observe(ruleAt.Child("rule"), cost, overLimit)
		if r.UsesOldSelf && uncorrelated != nil {
			list := c.b.policyPath(uncorrelated.String())
			c.refuse(ruleAt.Child("rule"), "oldSelf (and immutable) cannot be used inside the items of the list %s, where the API server cannot tell which old item is which: "+
				"put the rule on %s itself", list, list)
		}
	}
}

// checkText checks a rule's message as the API server does before it compiles the rule.
func (c *ruleCheck) checkText(at *field.Path, r apiextensionsv1.ValidationRule) {
	msg := strings.TrimSpace(r.Message)
	switch {
	case r.Message != "" && msg == "":
		c.refuse(at.Child("message"), "a message must not be blank")
	case strings.ContainsAny(msg, "\n\r"):
		c.refuse(at.Child("message"), "a message must be one line")
	case strings.ContainsAny(strings.TrimSpace(r.Rule), "\n\r") && msg == "":
		c.refuse(at.Child("message"), "a rule of several lines needs a message")
	}
}

// observe adds a rule's cost to the total of the schema; one over the limit of a rule is
// reported already.
func (c *ruleCheck) observe(at *field.Path, cost uint64, overLimit bool) {
	if cost > math.MaxUint64-c.total {
		c.total = math.MaxUint64
	} else {
		c.total += cost
	}
	if cost < schemaCostLimit/100 || overLimit {
		return
	}
	c.expensive = append(c.expensive, ruleCost{at: at, cost: cost})
	sort.SliceStable(c.expensive, func(i, j int) bool { return c.expensive[i].cost > c.expensive[j].cost })
	c.expensive = c.expensive[:min(len(c.expensive), 4)]
}

func (c *ruleCheck) refuse(at *field.Path, format string, args ...any) {
	c.b.errorf(c.b.policyPath(at.String()), "the API server refuses the rule: "+format, args...)
}

// celError is one error of a CEL compilation as the API server words it.
var celError = regexp.MustCompile(`ERROR: <input>:\d+:(\d+): ([^\n]*)`)

// explain words an error of the API server's compilation of a rule as the policy's expressions'
// are: one line per problem, its column, and the name a misspelt one likely meant.
func (c *ruleCheck) explain(detail string) string {
	found := celError.FindAllStringSubmatch(detail, -1)
	if len(found) == 0 {
		return detail
	}
	msgs := make([]string, 0, len(found))
	for _, f := range found {
		msg := strings.ReplaceAll(f[2], " (in container '')", "")
		msgs = append(msgs, fmt.Sprintf("%s%s (column %s of the rule)", msg, c.suggestion(msg), f[1]))
	}
	return strings.Join(msgs, "; ")
}

// notBool is how to write a rule the API server refuses for not returning a bool.
func notBool(detail string) string {
	if !strings.Contains(detail, "must evaluate to a bool") {
		return ""
	}
	return ": a rule is true when the value is valid: compare, e.g. \"self.minReplicas <= self.maxReplicas\", \"size(self.hosts) > 0\", \"has(self.tls)\""
}

// suggestion proposes what a misspelt field or variable of a rule likely meant.
func (c *ruleCheck) suggestion(msg string) string {
	if name, ok := quotedAfter(msg, "undeclared reference to '"); ok {
		return fieldpath.DidYouMean(name, []string{"self", "oldSelf"})
	}
	name, ok := quotedAfter(msg, "undefined field '")
	if !ok {
		return ""
	}
	if c.names == nil {
		c.names = propertyNames(c.root)
	}
	return fieldpath.DidYouMean(name, c.names)
}

// quotedAfter returns the name quoted after prefix in a message.
func quotedAfter(msg, prefix string) (string, bool) {
	_, rest, ok := strings.Cut(msg, prefix)
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "'")
	return name, ok
}

// propertyNames returns the names of every field a schema declares, sorted.
func propertyNames(s *apiextensionsv1.JSONSchemaProps) []string {
	seen := map[string]bool{}
	var walk func(s *apiextensionsv1.JSONSchemaProps)
	walk = func(s *apiextensionsv1.JSONSchemaProps) {
		for name, p := range s.Properties {
			seen[name] = true
			walk(&p)
		}
		if s.Items != nil && s.Items.Schema != nil {
			walk(s.Items.Schema)
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			walk(s.AdditionalProperties.Schema)
		}
	}
	walk(s)
	return slices.Sorted(maps.Keys(seen))
}
