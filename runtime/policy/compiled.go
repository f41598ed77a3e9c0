package policy

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/projection"
	"metacel.dev/metacel/runtime/readiness"
)

// MaxChildrenPerParent caps how many children one parent may have, so that a forEach over a large
// list fails clearly instead of flooding the API server.
const MaxChildrenPerParent = 1000

// Compiled is a policy ready to evaluate: every expression compiled and type-checked, every
// resource resolved. It is immutable and safe for concurrent use.
type Compiled struct {
	Policy *CompositePolicy
	Source *Source
	// Parent is the parent resource.
	Parent kinds.Info
	// ParentNumbers are where the parent's schema declares number fields: CEL reads a parent as
	// ParentForCEL gives it.
	ParentNumbers *expr.Numbers
	// ParentSelector filters parents; nil selects every object of the resource.
	ParentSelector *metav1.LabelSelector
	// ChildResources are the resources children may be, by GroupVersionResource.
	ChildResources map[schema.GroupVersionResource]ChildResourceInfo
	Validations    []CompiledValidation
	Variables      []CompiledVariable
	Related        []CompiledRelated
	Confinement    CompiledConfinement
	Children       []CompiledChild
	// Status, when not nil, computes the fields merged into the parent's status.
	Status *expr.Template
	// ReadyWhen, when not nil, is the parent's own readiness (spec.readyWhen).
	ReadyWhen *expr.Program
	// Conditions compute the parent's own conditions (spec.conditions), in order.
	Conditions []CompiledCondition
	// Conversion, when not nil, converts the parent's objects between the versions its
	// parentSchema declares.
	Conversion *CompiledConversion
	// Order lists the indexes of Children in the order they are applied: each after those it
	// waits for (CompiledChild.After), the others as listed. Deletion goes in reverse.
	Order []int
	// ResyncPeriod is 0 when the policy asks for no periodic re-sync.
	ResyncPeriod time.Duration
	// Rollout, when not nil, says how a new version of the policy reaches its parents; nil: at once.
	Rollout *CompiledRollout
	// ReadsParentStatus is true when an expression of a sync may read the parent's status: a
	// sync's own status write may then change what the next sync renders.
	ReadsParentStatus bool
	// ReadsChildren is true when an expression may read the observed children (the variable
	// children): the children and status a render wants may then depend on what exists.
	ReadsChildren bool
}

// Name returns the policy's name.
func (c *Compiled) Name() string { return c.Policy.Metadata.Name }

// ServiceAccountName is the ServiceAccount the policy acts as, "" for the runtime itself.
func (c *Compiled) ServiceAccountName() string { return c.Policy.Spec.ServiceAccountName }

// ChildResourceInfo is an allowed child resource and how its objects are updated.
type ChildResourceInfo struct {
	kinds.Info
	Method UpdateMethod
	// ObjectSchema is the schema every child of the resource must fit, built when the policy
	// loads; nil when it is not known (a guessed resource, an aggregated API).
	ObjectSchema *kinds.ObjectSchema
	// Readiness is what judging the readiness of a child with no readyWhen needs to know of its
	// kind beyond the child.
	Readiness readiness.Kind
	// Keep is what the cache of the resource keeps of each child: what a sync reads of it
	// (projection.go); nil keeps children whole.
	Keep *projection.Fields
}

// ChildResourceOfKind returns the child resource whose objects are of kind gvk, when the policy
// knows that resource's kind (it was not guessed): what a render would otherwise ask the mapper
// for every child of every sync.
func (p *Compiled) ChildResourceOfKind(gvk schema.GroupVersionKind) (ChildResourceInfo, bool) {
	for gvr, r := range p.ChildResources {
		if !r.Guessed && r.Kind == gvk.Kind && gvr.Group == gvk.Group && gvr.Version == gvk.Version {
			return r, true
		}
	}
	return ChildResourceInfo{}, false
}

// CompiledCondition is one of the parent's own conditions: its type, and a template giving its
// status, reason and message.
type CompiledCondition struct {
	Path string
	Type string
	// Fields evaluates to {status, reason, message}.
	Fields *expr.Template
}

// CompiledValidation is a compiled validation rule.
type CompiledValidation struct {
	Path        string
	Rule        *expr.Program
	Message     string
	MessageExpr *expr.Program
}

// CompiledVariable is a compiled variable.
type CompiledVariable struct {
	Path string
	Name string
	Expr *expr.Program
}

// CompiledRelated is a related object reference whose name, namespace and selector labels are
// templates over the parent.
type CompiledRelated struct {
	Path string
	ID   string
	kinds.Info
	Namespace *expr.Template
	Name      *expr.Template
	// Selector selects a list; its MatchLabels values are templates in SelectorLabels.
	Selector       *metav1.LabelSelector
	SelectorLabels map[string]*expr.Template
	// Numbers are where the schema that types the related objects declares number fields (nil:
	// none, or the objects are dyn): ForCEL binds them as doubles, as the parent's.
	Numbers *expr.Numbers
}

// ForCEL is a related object as expressions read it (Compiled.ParentForCEL).
func (r *CompiledRelated) ForCEL(obj map[string]any) map[string]any { return r.Numbers.AsDoubles(obj) }

// IsList reports whether the related entry selects a list of objects.
func (r *CompiledRelated) IsList() bool { return r.Selector != nil }

// CompiledChild is a compiled child entry.
type CompiledChild struct {
	Path           string
	ID             string
	IncludeWhen    *expr.Program
	ForEach        *expr.Program
	Template       *expr.Template
	Expression     *expr.Program
	ReadyWhen      *expr.Program
	DeletionPolicy DeletionPolicy
	CrossNamespace bool
	// After are the children this one waits for (order.go): applied once they exist, or are
	// ready, and deleted before them.
	After []Dependency
	// Numbers are where the schema that types the child's kind declares number fields (nil:
	// none, or the child is dyn): ForCEL binds observed children as doubles, as the parent's.
	Numbers *expr.Numbers
}

// ForCEL is an observed child as expressions read it (Compiled.ParentForCEL).
func (c *CompiledChild) ForCEL(obj map[string]any) map[string]any { return c.Numbers.AsDoubles(obj) }

// IsList reports whether the child entry produces a list (forEach or an expression).
func (c *CompiledChild) IsList() bool { return c.ForEach != nil || c.Expression != nil }

// ParentForCEL is a parent's object as its expressions read it: the whole numbers of its number
// fields as doubles, as the schema types them (expr.Numbers). The object is not modified.
func (c *Compiled) ParentForCEL(obj map[string]any) map[string]any {
	return c.ParentNumbers.AsDoubles(obj)
}
