package policy

import (
	"math"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/fieldpath"
)

// celTokens are the words CEL's grammar reads as literals or operators, so that they cannot follow
// a dot and cannot name a variable, a related object or a child. CEL's other reserved words
// (namespace, package, ...) can: they are declared as fields that expressions may select.
var celTokens = map[string]bool{"true": true, "false": true, "null": true, "in": true}

// Validate checks what the types cannot: required fields, enums, names and ids. It returns an
// ErrorList with every problem, or nil.
func Validate(doc *Document) error {
	v := &validator{src: doc.Source}
	p := doc.Policy
	v.name("metadata.name", p.Metadata.Name)
	if p.Metadata.Name == "true" {
		v.errorf("metadata.name", `a policy may not be named "true": its children carry the label metacel.dev/policy=<name>, `+
			`and metacel.dev/policy=true marks the ConfigMaps that hold policies; choose another name`)
	}
	v.parent("spec.parentResource", p.Spec.ParentResource)
	v.childResources(p.Spec.ChildResources)
	if r := p.Spec.ResyncPeriodSeconds; r != nil && *r < 1 {
		v.errorf("spec.resyncPeriodSeconds", "must be at least 1 (seconds), got %d", *r)
	}
	for i, val := range p.Spec.Validations {
		v.required(fieldpath.Index("spec.validations", i)+".expression", val.Expression)
	}
	ids := map[string]string{}
	for i, vr := range p.Spec.Variables {
		path := fieldpath.Index("spec.variables", i)
		v.id(path+".name", vr.Name, ids)
		v.required(path+".expression", vr.Expression)
	}
	ids = map[string]string{} // related and children are separate namespaces of ids
	for i, r := range p.Spec.Related {
		v.related(fieldpath.Index("spec.related", i), r, ids)
	}
	ids = map[string]string{}
	for i, c := range p.Spec.Children {
		v.child(fieldpath.Index("spec.children", i), c, ids)
	}
	if c := p.Spec.Confinement; c != nil {
		v.namespaceRule("spec.confinement.relatedNamespaces", c.RelatedNamespaces)
		v.namespaceRule("spec.confinement.childNamespaces", c.ChildNamespaces)
	}
	v.rollout("spec.rollout", p.Spec.Rollout)
	v.serviceAccount("spec.serviceAccountName", p.Spec.ServiceAccountName)
	if len(p.Spec.Children) > 0 && len(p.Spec.ChildResources) == 0 {
		v.errorf("spec.childResources", "is required: list every resource the children may be (apiVersion and resource)")
	}
	return v.errs.Err()
}

type validator struct {
	src  *Source
	errs ErrorList
}

func (v *validator) errorf(path, format string, args ...any) {
	v.errs = append(v.errs, v.src.Errorf(path, format, args...))
}

func (v *validator) required(path, value string) bool {
	if strings.TrimSpace(value) == "" {
		v.errorf(path, "is required")
		return false
	}
	return true
}

func (v *validator) name(path, name string) {
	if !v.required(path, name) {
		return
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		v.errorf(path, "%q is not a valid policy name: %s", name, strings.Join(errs, "; "))
	}
}

// id checks a CEL-visible identifier and that it is unique among seen.
// serviceAccount checks a ServiceAccount's name, when one is given.
func (v *validator) serviceAccount(path, name string) {
	if name == "" {
		return
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		v.errorf(path, "%q is not a ServiceAccount name: %s", name, strings.Join(errs, "; "))
	}
}

func (v *validator) id(path, id string, seen map[string]string) {
	if !v.required(path, id) {
		return
	}
	switch {
	case !fieldpath.IsIdentifier(id):
		v.errorf(path, "%q is not a valid identifier: use letters, digits and _, not starting with a digit (it is read in CEL as a field name)", id)
	case celTokens[id]:
		v.errorf(path, "%q is a word of CEL's grammar and cannot be a field name; choose another name", id)
	case seen[id] != "":
		v.errorf(path, "duplicate id %q (first used at %s)", id, seen[id])
	}
	seen[id] = path
}

func (v *validator) groupVersion(path, apiVersion string) {
	if !v.required(path, apiVersion) {
		return
	}
	if _, err := schema.ParseGroupVersion(apiVersion); err != nil || strings.Count(apiVersion, "/") > 1 {
		v.errorf(path, "%q is not a valid apiVersion (group/version, or v1 for the core group)", apiVersion)
	}
}

func (v *validator) resource(path, resource string) {
	if !v.required(path, resource) {
		return
	}
	if errs := validation.IsDNS1123Subdomain(resource); len(errs) > 0 || strings.ContainsAny(resource, "./") {
		v.errorf(path, "%q is not a resource name: give the lowercase plural, e.g. \"pods\" or \"myapps\"", resource)
	}
}

func (v *validator) selector(path string, sel *metav1.LabelSelector) {
	if sel == nil {
		return
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		v.errorf(path, "invalid label selector: %v", err)
	}
}

func (v *validator) parent(path string, p ParentResource) {
	v.groupVersion(path+".apiVersion", p.APIVersion)
	v.resource(path+".resource", p.Resource)
	v.selector(path+".labelSelector", p.LabelSelector)
}

func (v *validator) childResources(crs []ChildResource) {
	seen := map[string]string{}
	for i, cr := range crs {
		path := fieldpath.Index("spec.childResources", i)
		v.groupVersion(path+".apiVersion", cr.APIVersion)
		v.resource(path+".resource", cr.Resource)
		key := cr.APIVersion + " " + cr.Resource
		if first, dup := seen[key]; dup {
			v.errorf(path, "duplicate child resource %s %s (first at %s)", cr.APIVersion, cr.Resource, first)
		}
		seen[key] = path
		switch cr.Method() {
		case InPlace, Recreate, OnDelete:
		default:
			v.errorf(path+".updateStrategy.method", "unknown method %q: use InPlace, Recreate or OnDelete", cr.UpdateStrategy.Method)
		}
	}
}

func (v *validator) related(path string, r Related, ids map[string]string) {
	v.id(path+".id", r.ID, ids)
	v.groupVersion(path+".apiVersion", r.APIVersion)
	v.resource(path+".resource", r.Resource)
	v.selector(path+".selector", r.Selector)
	switch {
	case r.Name == "" && r.Selector == nil:
		v.errorf(path, "needs a name (one object) or a selector (a list of objects)")
	case r.Name != "" && r.Selector != nil:
		v.errorf(path, "has both name and selector: use name for one object, selector for a list")
	}
}

func (v *validator) child(path string, c Child, ids map[string]string) {
	v.id(path+".id", c.ID, ids)
	if fieldpath.IsIdentifier(c.ID) {
		if errs := validation.IsValidLabelValue(c.ID); len(errs) > 0 {
			v.errorf(path+".id", "%q cannot be the value of the label %s that every child carries (%s): "+
				"use at most 63 characters, beginning and ending with a letter or digit", c.ID, contract.LabelChildID, strings.Join(errs, "; "))
		}
	}
	switch {
	case c.Template == nil && c.Expression == "":
		v.errorf(path, "needs a template (a YAML object) or an expression (CEL returning objects)")
	case c.Template != nil && c.Expression != "":
		v.errorf(path, "has both template and expression: use one")
	}
	if c.Template != nil {
		for _, f := range []string{"apiVersion", "kind"} {
			if _, ok := c.Template[f]; !ok {
				v.errorf(path+".template", "is missing %s", f)
			}
		}
	}
	switch c.DeletionPolicy {
	case "", DeletionDelete, DeletionOrphan:
	default:
		v.errorf(path+".deletionPolicy", "unknown deletion policy %q: use Delete or Orphan", c.DeletionPolicy)
	}
}

// namespaceRule checks a confinement rule: valid names, a valid consent label, something allowed.
func (v *validator) namespaceRule(path string, r *NamespaceRule) {
	if r == nil {
		return
	}
	for i, n := range r.Names {
		if n == "*" {
			continue
		}
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			v.errorf(fieldpath.Index(path+".names", i), "%q is not a namespace name: %s", n, errs[0])
		}
	}
	if r.ConsentLabel != "" {
		if errs := validation.IsQualifiedName(r.ConsentLabel); len(errs) > 0 {
			v.errorf(path+".consentLabel", "%q is not a label key: %s", r.ConsentLabel, errs[0])
		}
	}
	if len(r.Names) == 0 && r.Expression == "" && r.ConsentLabel == "" {
		v.errorf(path, "allows nothing: give names (\"*\" for any), an expression, or a consentLabel")
	}
}

// rollout checks a rollout: steps of growing shares ending at 100, a deadline, a failure budget.
func (v *validator) rollout(path string, r *Rollout) {
	if r == nil {
		return
	}
	v.rolloutSteps(path+".steps", r.Steps)
	if d := r.HealthDeadlineSeconds; d != nil {
		v.seconds(path+".healthDeadlineSeconds", *d, 1)
	}
	v.failureBudget(path+".failureBudget", r.FailureBudget)
}

func (v *validator) rolloutSteps(path string, steps []RolloutStep) {
	if len(steps) == 0 {
		v.errorf(path, "needs at least one step: give the shares of parents to move, ending with {percent: 100}")
		return
	}
	prev := 0
	for i, st := range steps {
		p := fieldpath.Index(path, i)
		switch {
		case !v.present(p + ".percent"):
			v.errorf(p+".percent", "is required: the share of parents (1 to 100) on the new version after this step")
		case st.Percent < 1 || st.Percent > 100:
			v.errorf(p+".percent", "must be from 1 to 100 (a share of the parents), got %d", st.Percent)
		case st.Percent <= prev:
			v.errorf(p+".percent", "must be more than the step before's %d: each step moves more parents (e.g. 10, 50, 100)", prev)
		}
		prev = max(prev, st.Percent)
		v.seconds(p+".pauseSeconds", st.PauseSeconds, 0)
	}
	if last := steps[len(steps)-1]; last.Percent != 100 && last.Percent >= 1 && last.Percent <= 100 {
		p := fieldpath.Index(path, len(steps)-1) + ".percent"
		v.errorf(p, "the last step must be 100, got %d: end with {percent: 100} so that every parent reaches the new version", last.Percent)
	}
}

// maxSeconds is the longest time.Duration in whole seconds (about 292 years).
const maxSeconds = math.MaxInt64 / int64(time.Second)

// seconds checks a number of seconds: at least least, and no longer than a time.Duration holds.
func (v *validator) seconds(path string, n, least int64) {
	switch {
	case n < least:
		v.errorf(path, "must be at least %d (seconds), got %d", least, n)
	case n > maxSeconds:
		v.errorf(path, "must be at most %d (seconds), got %d", maxSeconds, n)
	}
}

// failureBudget checks a count (at least 0) or a percentage from "0%" to "100%".
func (v *validator) failureBudget(path string, b *intstr.IntOrString) {
	switch {
	case b == nil:
	case b.Type == intstr.Int && b.IntVal < 0:
		v.errorf(path, "must be at least 0 (parents), got %d", b.IntVal)
	case b.Type == intstr.String:
		if pct, ok := percentage(b.StrVal); !ok {
			v.errorf(path, "%q is not a count or a percentage: write an integer (failureBudget: 2) or a percentage string (failureBudget: \"10%%\")", b.StrVal)
		} else if pct > 100 {
			v.errorf(path, "%q is over 100%%: write a percentage from \"0%%\" to \"100%%\"", b.StrVal)
		}
	}
}

// percentage reads "N%" (N digits only); ok is false for anything else.
func percentage(s string) (int, bool) {
	digits, ok := strings.CutSuffix(s, "%")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// present reports whether the document holds path (the decoder marks every field it decodes).
func (v *validator) present(path string) bool {
	_, ok := v.src.lines[path]
	return ok
}
