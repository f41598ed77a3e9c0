package policy

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiservercel "k8s.io/apiserver/pkg/cel"
	utilptr "k8s.io/utils/ptr"

	"metacel.dev/metacel/runtime/expr"
	"metacel.dev/metacel/runtime/fieldpath"
	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/runtime/manifest"
	"metacel.dev/metacel/runtime/readiness"
)

// LoadFiles reads, parses, validates and compiles every policy of the files; the errors of all
// files are returned together.
func LoadFiles(files []string, m kinds.Mapper) ([]*Compiled, error) {
	var out []*Compiled
	var errs ErrorList
	for _, f := range files {
		data, err := manifest.ReadInput(f)
		if err != nil {
			errs = append(errs, &FieldError{File: f, Msg: err.Error()})
			continue
		}
		compiled, err := Load(f, data, m)
		if err != nil {
			errs = append(errs, Errors(err)...)
		}
		out = append(out, compiled...)
	}
	return out, errs.Err()
}

// Load parses, validates and compiles every policy in data. The mapper resolves resources and
// gives the parent's schema when it is known; pass kinds.NewCatalog() for built-ins only.
func Load(file string, data []byte, m kinds.Mapper) ([]*Compiled, error) {
	docs, err := Parse(file, data)
	errs := Errors(err)
	var out []*Compiled
	for _, doc := range docs {
		if err := Validate(doc); err != nil {
			errs = append(errs, Errors(err)...)
			continue
		}
		c, err := compile(doc, m)
		if err != nil {
			errs = append(errs, Errors(err)...)
			continue
		}
		out = append(out, c)
	}
	// in file order: a document's checks run by topic, not by line
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	return out, errs.Err()
}

// Errors returns the FieldErrors of err: its list, or err as one error without a location.
func Errors(err error) ErrorList {
	if err == nil {
		return nil
	}
	var l ErrorList
	if errors.As(err, &l) {
		return l
	}
	return ErrorList{{Msg: err.Error()}}
}

// looseParent types a parent without a known schema as far as every object goes: apiVersion, kind
// and metadata typed, spec and status maps of dyn.
var looseParent = func() *apiservercel.DeclType {
	open := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: utilptr.To(true)}
	t, err := expr.ParentType(&apiextensionsv1.JSONSchemaProps{Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": open, "status": open}})
	if err != nil {
		panic(err)
	}
	return t
}()

// compile compiles a validated policy document: it resolves its resources and compiles and
// type-checks every expression, collecting every error with its file, line and field path.
func compile(doc *Document, m kinds.Mapper) (*Compiled, error) {
	errs := &loadErrors{src: doc.Source}
	c := &compiler{loadErrors: errs, spec: &doc.Policy.Spec, m: m, reads: &expr.Reads{}}
	out := &Compiled{Policy: doc.Policy, Source: doc.Source, ParentSelector: c.spec.ParentResource.LabelSelector}
	known := c.parent()
	parent, crd, err := declaredParent(doc, known)
	out.Parent = parent
	out.ParentNumbers = expr.NumbersOf(parent.Schema)
	// a scope the policy declares for a parent nothing serves yet decides as a known one does
	scopeKnown := !parent.Guessed || (known.Guessed && err == nil && doc.Policy.Spec.ParentSchema != nil)
	c.check = &checker{loadErrors: errs, spec: c.spec, m: m, scopeKnown: scopeKnown}
	c.errs = append(c.errs, Errors(err)...)
	out.ChildResources = c.childResources()
	if r := c.spec.ResyncPeriodSeconds; r != nil {
		out.ResyncPeriod = time.Duration(*r) * time.Second
	}
	if !c.scopes(out.Parent, out.ChildResources) {
		return nil, c.errs
	}
	out.Related = c.related()
	out.Confinement = c.confinement()
	c.check.relatedNamespaces(out.Parent)
	out.Validations = c.validations()
	out.Rollout = c.rollout()
	out.Variables = c.variables()
	out.Children = c.children(out.Parent, out.ChildResources)
	out.Order = c.order(out.Children, out.Variables)
	out.Status = c.status()
	out.ReadyWhen = c.program(c.mainEnv, c.spec.ReadyWhen, "spec.readyWhen", expr.WantBool)
	out.Conditions = c.conditions()
	out.Conversion = (&conversionCompiler{errs, c.spec}).conversion(crd)
	c.check.statusSchema(out.Parent)
	c.check.statusTypes(out.Parent, c.mainEnv)
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	c.keepChildFields(out)
	out.ReadsParentStatus = c.reads.ParentStatus()
	out.ReadsChildren = c.reads.Children()
	return out, nil
}

// compiler compiles one policy document: its resources, environments and expressions. What the
// API server or the run time would refuse for every parent, written literally, is its checker's
// (check); both report to one list of the load's errors.
type compiler struct {
	*loadErrors
	spec  *Spec
	m     kinds.Mapper
	check *checker
	// reads records what the expressions of a sync may read (not the rollout's health rule)
	reads *expr.Reads

	// environments of each place an expression may appear
	parentEnv, validationEnv, mainEnv *expr.Env
	// readyEnvs are the environments of readyWhen, by the type of child (nil: dyn), built as
	// children need them from readyScope
	readyEnvs  map[*expr.ObjectType]*expr.Env
	readyScope expr.Scope
	// looseValidationEnv types an untyped parent's metadata (spec and status stay dyn), to find
	// a validation that can return no bool
	looseValidationEnv *expr.Env
	// scope declares parent, related and children; variables are added as they compile
	scope expr.Scope
	vars  []expr.Var
}

// loadErrors collects the errors of one policy's load, each at its file, line and field path.
type loadErrors struct {
	src  *Source
	errs ErrorList
}

func (e *loadErrors) errorf(path, format string, args ...any) {
	e.errs = append(e.errs, e.src.Errorf(path, format, args...))
}

// fail records a compile error; a template's PathErrors each keep their own path.
func (e *loadErrors) fail(path string, err error) {
	var pe expr.PathErrors
	if errors.As(err, &pe) {
		for _, p := range pe {
			e.errorf(p.Path, "%v", p.Err)
		}
		return
	}
	e.errorf(path, "%v", err)
}

// reportSchemaProblem reports a problem the walk of a template against its schema found, at its path.
func (e *loadErrors) reportSchemaProblem(path, msg string) { e.errorf(path, "%s", msg) }

func gvr(apiVersion, resource string) schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(apiVersion) // validated before
	return gv.WithResource(resource)
}

// resource looks a resource up. One the mapper knows in other versions only is an error: a
// version typo would otherwise wait forever for a resource that never comes.
func (c *compiler) resource(path, apiVersion, resource string) kinds.Info {
	info := kinds.LookupResource(c.m, gvr(apiVersion, resource))
	if !info.Guessed {
		return info
	}
	if moved, ok := movedFromExtensions[info.GVR.Resource]; ok && info.GVR.Group == "extensions" {
		c.errorf(path+".apiVersion", "%s is no longer served (Kubernetes removed the group extensions in 1.22): use %s", apiVersion, moved)
		return info
	}
	if versions := c.m.Versions(info.GVR.GroupResource()); len(versions) > 0 {
		gv := func(v string) string { return schema.GroupVersion{Group: info.GVR.Group, Version: v}.String() }
		served := make([]string, len(versions))
		for i, v := range versions {
			served[i] = gv(v)
		}
		c.errorf(path+".apiVersion", "%s is served as %s, not %s: use one of those", info.GVR.GroupResource(), strings.Join(served, ", "), apiVersion)
	}
	return info
}

// movedFromExtensions says where the resources of the group extensions went.
var movedFromExtensions = map[string]string{
	"deployments": "apps/v1", "daemonsets": "apps/v1", "replicasets": "apps/v1",
	"ingresses": "networking.k8s.io/v1", "networkpolicies": "networking.k8s.io/v1",
}

// parent looks the parent resource up. A version the runtime installs itself (parentSchema
// with install) may be one the cluster does not serve yet.
func (c *compiler) parent() kinds.Info {
	p := c.spec.ParentResource
	if ps := c.spec.ParentSchema; ps != nil && ps.Install {
		return kinds.LookupResource(c.m, gvr(p.APIVersion, p.Resource))
	}
	return c.resource("spec.parentResource", p.APIVersion, p.Resource)
}

func (c *compiler) childResources() map[schema.GroupVersionResource]ChildResourceInfo {
	out := make(map[schema.GroupVersionResource]ChildResourceInfo, len(c.spec.ChildResources))
	for i, cr := range c.spec.ChildResources {
		path := fieldpath.Index("spec.childResources", i)
		info := c.resource(path, cr.APIVersion, cr.Resource)
		s, err := kinds.SchemaOf(info)
		if err != nil {
			c.errorf(path, "%v: fix the CRD (the API server serves structural schemas only)", err)
		}
		out[info.GVR] = ChildResourceInfo{Info: info, Method: cr.Method(), ObjectSchema: s, Readiness: readinessKind(info)}
	}
	return out
}

// scopes builds the environments; it reports false when the parent's schema cannot type CEL.
func (c *compiler) scopes(parent kinds.Info, allowed map[schema.GroupVersionResource]ChildResourceInfo) bool {
	base := expr.Scope{}
	if parent.Schema != nil {
		t, err := expr.ParentType(parent.Schema)
		if err != nil {
			c.errorf("spec.parentResource", "the schema of %s cannot type CEL expressions: %v", parent.GVR, err)
			return false
		}
		base.Parent = t
	}
	typer := &kindTyper{m: c.m}
	related := map[string]expr.ObjectID{}
	for _, r := range c.spec.Related {
		related[r.ID] = typer.relatedID(r)
	}
	children := map[string]expr.ObjectID{}
	for _, ch := range c.spec.Children {
		children[ch.ID] = typer.childID(ch, allowed)
	}
	c.parentEnv = c.env(base)
	base.Related = related
	c.validationEnv = c.env(base)
	if base.Parent == nil {
		loose := base
		loose.Parent = looseParent
		loose.Reads = nil
		if env, err := expr.NewEnv(loose); err == nil {
			c.looseValidationEnv = env
		}
	}
	base.Children = children
	base.Variables = []expr.Var{}
	c.scope = base
	return c.parentEnv != nil && c.validationEnv != nil
}

func (c *compiler) env(s expr.Scope) *expr.Env {
	s.Reads = c.reads
	env, err := expr.NewEnv(s)
	if err != nil {
		c.errorf("spec", "%v", err)
		return nil
	}
	return env
}

func (c *compiler) related() []CompiledRelated {
	out := make([]CompiledRelated, 0, len(c.spec.Related))
	for i, r := range c.spec.Related {
		path := fieldpath.Index("spec.related", i)
		cr := CompiledRelated{Path: path, ID: r.ID, Info: c.resource(path, r.APIVersion, r.Resource), Selector: r.Selector}
		cr.Numbers = typedNumbers(c.scope.Related[r.ID].Type, cr.Schema)
		cr.Namespace = c.stringTemplate(r.Namespace, path+".namespace")
		cr.Name = c.stringTemplate(r.Name, path+".name")
		if r.Selector != nil {
			cr.SelectorLabels = map[string]*expr.Template{}
			for k, v := range r.Selector.MatchLabels {
				cr.SelectorLabels[k] = c.stringTemplate(v, fieldpath.Field(path+".selector.matchLabels", k))
			}
		}
		out = append(out, cr)
	}
	return out
}

// typedNumbers returns where the schema s of a child or related kind declares number fields, when
// the objects are typed (t, from s): a dyn object's numbers are read as they are.
func typedNumbers(t *expr.ObjectType, s *apiextensionsv1.JSONSchemaProps) *expr.Numbers {
	if t == nil {
		return nil
	}
	return expr.NumbersOf(s)
}

func (c *compiler) stringTemplate(s, path string) *expr.Template {
	if s == "" {
		return nil
	}
	t, err := c.parentEnv.CompileString(s, path, expr.WantString)
	if err != nil {
		c.fail(path, err)
	}
	return t
}

func (c *compiler) program(env *expr.Env, src, path string, want expr.Want) *expr.Program {
	if src == "" || env == nil {
		return nil
	}
	p, err := env.Compile(src, want)
	if err != nil {
		c.fail(path, notHereHint(err, path))
	}
	return p
}

// notHereHint explains an undeclared reference to a binding that exists, but not where the
// expression is: variables and children in validations (which run first), related in a related
// object's names and the confinement.
func notHereHint(err error, path string) error {
	for _, name := range []string{"variables", "children", "related"} {
		if !strings.Contains(err.Error(), "undeclared reference to '"+name+"'") {
			continue
		}
		switch {
		case name == "related" && (strings.HasPrefix(path, "spec.related") || strings.HasPrefix(path, "spec.confinement")):
			return fmt.Errorf("%w: related objects are not available here (they are found with these names and rules): read parent only", err)
		case name == "variables" && strings.HasPrefix(path, "spec.validations"):
			return fmt.Errorf("%w: variables are not available in validations, which run before them: read parent and related only, "+
				"and repeat the variable's expression here if you need it", err)
		case name == "children" && strings.HasPrefix(path, "spec.validations"):
			return fmt.Errorf("%w: children are not available in validations, which run before any child is read: read parent and related only", err)
		case strings.HasPrefix(path, "spec.rollout"):
			return fmt.Errorf("%w: the rollout's health rule reads parent only", err)
		}
	}
	return err
}

func (c *compiler) validations() []CompiledValidation {
	out := make([]CompiledValidation, 0, len(c.spec.Validations))
	for i, v := range c.spec.Validations {
		path := fieldpath.Index("spec.validations", i)
		cv := CompiledValidation{Path: path, Message: v.Message}
		cv.Rule = c.program(c.validationEnv, v.Expression, path+".expression", expr.WantBool)
		if cv.Rule != nil && c.looseValidationEnv != nil && cv.Rule.Out.Kind() == types.DynKind {
			if p, err := c.looseValidationEnv.Compile(v.Expression, expr.WantAny); err == nil && !p.Out.IsAssignableType(cel.BoolType) {
				c.errorf(path+".expression", "%q must return a bool, but returns %s", v.Expression, cel.FormatCELType(p.Out))
			}
		}
		cv.MessageExpr = c.program(c.validationEnv, v.MessageExpression, path+".messageExpression", expr.WantString)
		if cv.Message == "" && cv.MessageExpr == nil {
			cv.Message = fmt.Sprintf("failed validation: %s", v.Expression)
		}
		out = append(out, cv)
	}
	return out
}

// variables compiles each variable in an environment that declares the variables before it, so
// the type of each is known to those after.
func (c *compiler) variables() []CompiledVariable {
	out := make([]CompiledVariable, 0, len(c.spec.Variables))
	scope := c.scope
	for i, v := range c.spec.Variables {
		path := fieldpath.Index("spec.variables", i)
		scope.Variables = append([]expr.Var(nil), c.vars...)
		p := c.program(c.env(scope), v.Expression, path+".expression", expr.WantAny)
		t := cel.DynType
		if p != nil {
			t = p.Out
		}
		c.vars = append(c.vars, expr.Var{Name: v.Name, Type: t})
		out = append(out, CompiledVariable{Path: path, Name: v.Name, Expr: p})
	}
	scope.Variables = c.vars
	c.mainEnv = c.env(scope)
	scope.Child = true
	c.readyScope = scope
	return out
}

// readyEnv returns the environment of a readyWhen, with child of the type of its child's kind
// (nil: dyn).
func (c *compiler) readyEnv(child *expr.ObjectType) *expr.Env {
	if env, ok := c.readyEnvs[child]; ok {
		return env
	}
	scope := c.readyScope
	scope.ChildType = child
	env := c.env(scope)
	if c.readyEnvs == nil {
		c.readyEnvs = map[*expr.ObjectType]*expr.Env{}
	}
	c.readyEnvs[child] = env
	return env
}

func (c *compiler) children(parent kinds.Info, allowed map[schema.GroupVersionResource]ChildResourceInfo) []CompiledChild {
	out := make([]CompiledChild, 0, len(c.spec.Children))
	for i, ch := range c.spec.Children {
		path := fieldpath.Index("spec.children", i)
		cc := CompiledChild{Path: path, ID: ch.ID, DeletionPolicy: ch.DeletionPolicy, CrossNamespace: ch.CrossNamespace}
		if cc.DeletionPolicy == "" {
			cc.DeletionPolicy = DeletionDelete
		}
		cc.IncludeWhen = c.program(c.mainEnv, ch.IncludeWhen, path+".includeWhen", expr.WantBool)
		cc.ForEach = c.program(c.mainEnv, ch.ForEach, path+".forEach", expr.WantList)
		if ch.ReadyWhen != "" {
			cc.ReadyWhen = c.program(c.readyEnv(c.scope.Children[ch.ID].Type), ch.ReadyWhen, path+".readyWhen", expr.WantBool)
		}
		env := c.mainEnv
		if ch.ForEach != "" {
			env = c.eachEnv(cc.ForEach)
		}
		cc.Expression = c.program(env, ch.Expression, path+".expression", expr.WantObjects)
		if info, ok := templateKind(c.m, ch.Template); ok && ch.Template != nil {
			cc.Numbers = typedNumbers(c.scope.Children[ch.ID].Type, allowed[info.GVR].Schema)
		}
		if ch.Template != nil && env != nil {
			t, err := env.CompileTemplate(ch.Template, path+".template")
			if err != nil {
				c.fail(path+".template", err)
			}
			cc.Template = t
			c.check.template(ch.Template, path+".template", env, allowed)
		}
		c.check.placement(ch, path, parent)
		out = append(out, cc)
	}
	c.check.sameObject()
	return out
}

// eachEnv declares `each` with the element type of the forEach list.
func (c *compiler) eachEnv(forEach *expr.Program) *expr.Env {
	scope := c.scope
	scope.Variables = c.vars
	scope.Each = cel.DynType
	if forEach != nil && forEach.Out.Kind() == cel.ListType(cel.DynType).Kind() && len(forEach.Out.Parameters()) == 1 {
		scope.Each = forEach.Out.Parameters()[0]
	}
	return c.env(scope)
}

func (c *compiler) status() *expr.Template {
	if c.spec.Status == nil || c.mainEnv == nil {
		return nil
	}
	t, err := c.mainEnv.CompileTemplate(c.spec.Status, "spec.status")
	if err != nil {
		c.fail("spec.status", err)
	}
	return t
}

// rollout compiles spec.rollout: its steps, its deadline and its health rule, typed against the
// parent only.
func (c *compiler) rollout() *CompiledRollout {
	r := c.spec.Rollout
	if r == nil {
		return nil
	}
	out := &CompiledRollout{HealthDeadline: defaultHealthDeadline, FailureBudget: intstr.FromInt32(0)}
	for _, st := range r.Steps {
		out.Steps = append(out.Steps, CompiledRolloutStep{Percent: st.Percent, Pause: time.Duration(st.PauseSeconds) * time.Second})
	}
	if d := r.HealthDeadlineSeconds; d != nil {
		out.HealthDeadline = time.Duration(*d) * time.Second
	}
	if b := r.FailureBudget; b != nil {
		out.FailureBudget = *b
	}
	out.Health = c.program(c.parentEnv.Unrecorded(), r.Health, "spec.rollout.health", expr.WantBool)
	return out
}

// readinessKind is what the readiness of a child of the resource is judged with: a custom
// resource whose schema declares status.conditions reports them (a metacel parent does), so one
// with none has not been looked at by its controller yet. Built-in kinds are judged by their
// own rules, whatever their schemas declare (a Namespace has conditions it seldom sets).
func readinessKind(info kinds.Info) readiness.Kind {
	if info.Schema == nil {
		return readiness.Kind{}
	}
	status, ok := info.Schema.Properties["status"]
	if !ok {
		return readiness.Kind{}
	}
	_, ok = status.Properties["conditions"]
	return readiness.Kind{ReportsConditions: ok}
}
