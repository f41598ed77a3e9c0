package expr

import (
	"fmt"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/ext"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/library"
)

// Limits, of the same order as Kubernetes' for CRD validation rules.
const (
	// perExpressionCostLimit bounds the estimated cost of one expression at compile time.
	perExpressionCostLimit = 1_000_000
	// SyncCostBudget bounds the actual cost of all expressions evaluated in one sync of one parent.
	SyncCostBudget = 10_000_000
)

var (
	baseOnce sync.Once
	baseEnv  *cel.Env
	runEnv   *cel.Env
	baseErr  error
)

// base returns the environment every scope extends; it is built once per process.
func base() (*cel.Env, error) {
	b, _, err := bases()
	return b, err
}

// bases returns the environment every scope extends, and the one its programs are planned in.
//
// The second has the same functions without the cost trackers of cel-go's lists and sets
// libraries, which cel-go would build into a map at every evaluation (more than half the time of
// a short one); runtimeCosts charges those functions the same. Everything a program is planned
// from (functions, their overload ids, types, variables) is declared alike in both.
func bases() (check, run *cel.Env, err error) {
	baseOnce.Do(func() {
		if baseEnv, baseErr = cel.NewEnv(baseOptions(3, ext.Sets())...); baseErr != nil {
			return
		}
		fns := baseEnv.Functions()
		var sets []*decls.FunctionDecl
		for _, name := range []string{"sets.contains", "sets.equivalent", "sets.intersects"} {
			sets = append(sets, fns[name])
		}
		runEnv, baseErr = cel.NewEnv(baseOptions(2, cel.FunctionDecls(sets...))...)
	})
	return baseEnv, runEnv, baseErr
}

// baseOptions are the base environment's options, with cel-go's lists library at listsVersion (3
// adds cost estimates and trackers only) and its sets library as sets.
func baseOptions(listsVersion uint32, sets cel.EnvOption) []cel.EnvOption {
	return []cel.EnvOption{
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(ext.StringsVersion(2)),
		ext.Lists(ext.ListsVersion(listsVersion)),
		sets,
		ext.Math(),
		ext.Encoders(),
		ext.Bindings(),
		ext.TwoVarComprehensions(),
		library.URLs(),
		library.Regex(),
		library.Lists(),
		library.Quantity(),
		library.IP(),
		library.CIDR(),
		library.Format(),
		library.SemverLib(library.SemverVersion(1)),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
		),
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
		metacelLibrary(),
	}
}

// Scope declares the variables visible where an expression appears.
type Scope struct {
	// Parent is the parent's type from its schema; nil declares parent as map(string, dyn).
	Parent *apiservercel.DeclType
	// Variables declares `variables` with these fields, in order; nil leaves it undeclared.
	Variables []Var
	// Related declares `related` with these ids, typed by their resources' kinds; nil leaves it
	// undeclared.
	Related map[string]ObjectID
	// Children declares `children` with these ids; nil leaves it undeclared.
	Children map[string]ObjectID
	// Each declares `each`, the forEach item, with this type; nil leaves it undeclared.
	Each *cel.Type
	// Child declares `child`, the observed child in readyWhen, typed ChildType.
	Child bool
	// ChildType is the type of `child`: the kind of the child whose readyWhen it is; nil: dyn.
	ChildType *ObjectType
	// Reads, when set, records what the expressions compiled in the environment may read.
	Reads *Reads
}

// ObjectID is an id of `children` or `related`, and the objects it holds.
type ObjectID struct {
	// Type is the type of the objects' kind; nil: dyn (an expression child, a kind not known).
	Type *ObjectType
	// List is true for an id that holds a list of objects (a forEach or expression child, a
	// related entry with a selector).
	List bool
}

// Var is a declared variable and the type of its expression.
type Var struct {
	Name string
	Type *cel.Type
}

// Env is the CEL environment of one Scope.
type Env struct {
	cel *cel.Env
	// run is the same scope over the base its programs are planned in (bases).
	run   *cel.Env
	sizes *sizes
	// types are the object types the scope declares, for suggesting field names.
	types *typeProvider
	// typeRoots are the declared types of the scope's variables, by name, as far as they are
	// known: for finding what an expression typed dyn reads (MayGiveString)
	typeRoots map[string]*apiservercel.DeclType
	reads     *Reads
}

// NewEnv builds the environment of a scope. It is done once per place in a policy, at load.
func NewEnv(s Scope) (*Env, error) {
	b, rb, err := bases()
	if err != nil {
		return nil, fmt.Errorf("build CEL base environment: %w", err)
	}
	var opts []cel.EnvOption
	var roots, flat []*apiservercel.DeclType
	var kinds []*ObjectType
	sizeRoots := map[string]*apiservercel.DeclType{}
	typeRoots := map[string]*apiservercel.DeclType{}

	parent := apiservercel.NewMapType(apiservercel.StringType, apiservercel.DynType, -1)
	if s.Parent != nil {
		parent = s.Parent
		roots = append(roots, parent)
	}
	sizeRoots["parent"], typeRoots["parent"] = parent, parent
	opts = append(opts, cel.Variable("parent", parent.CelType()))

	if s.Variables != nil {
		t := objectType("metacel.variables", varFields(s.Variables))
		roots = append(roots, t)
		opts = append(opts, cel.Variable("variables", t.CelType()))
	}
	for _, v := range []struct {
		name string
		ids  map[string]ObjectID
	}{{"related", s.Related}, {"children", s.Children}} {
		if v.ids == nil {
			continue
		}
		t := objectType("metacel."+v.name, idFields(v.ids))
		flat = append(flat, t)
		for _, id := range v.ids {
			kinds = append(kinds, id.Type)
		}
		typeRoots[v.name] = t
		opts = append(opts, cel.Variable(v.name, t.CelType()))
	}
	if s.Each != nil {
		opts = append(opts, cel.Variable("each", s.Each))
	}
	if s.Child {
		kinds = append(kinds, s.ChildType)
		typeRoots["child"] = s.ChildType.declType()
		opts = append(opts, cel.Variable("child", s.ChildType.declType().CelType()))
	}
	sets := scopeTypes(roots, flat, kinds)
	env, provider, err := declare(b, sets, opts)
	if err != nil {
		return nil, err
	}
	run, _, err := declare(rb, sets, opts)
	if err != nil {
		return nil, err
	}
	return &Env{cel: env, run: run, sizes: newSizes(sizeRoots), types: provider, typeRoots: typeRoots, reads: s.Reads}, nil
}

// declare extends a base with a scope's types and variables; it returns the types' provider too.
func declare(b *cel.Env, sets []map[string]*apiservercel.DeclType, opts []cel.EnvOption) (*cel.Env, *typeProvider, error) {
	provider := &typeProvider{Provider: b.CELTypeProvider(), sets: sets}
	env, err := b.Extend(append([]cel.EnvOption{cel.CustomTypeProvider(provider)}, opts...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("declare policy variables: %w", err)
	}
	return env, provider, nil
}

func objectType(name string, fields map[string]*apiservercel.DeclField) *apiservercel.DeclType {
	return apiservercel.NewObjectType(name, fields)
}

// idFields declares the ids of `children` or `related`: each the type of its objects' kind, or a
// list of them.
func idFields(ids map[string]ObjectID) map[string]*apiservercel.DeclField {
	fields := make(map[string]*apiservercel.DeclField, len(ids))
	for id, o := range ids {
		t := o.Type.declType()
		if o.List {
			t = apiservercel.NewListType(t, -1)
		}
		fields[id] = apiservercel.NewDeclField(id, t, false, nil, nil)
	}
	return fields
}

func varFields(vars []Var) map[string]*apiservercel.DeclField {
	fields := make(map[string]*apiservercel.DeclField, len(vars))
	for _, v := range vars {
		fields[v.Name] = apiservercel.NewDeclField(v.Name, declTypeOf(v.Type), true, nil, nil)
	}
	return fields
}

// declTypeOf converts a checked CEL type into a DeclType, for declaring a variable's type.
func declTypeOf(t *cel.Type) *apiservercel.DeclType {
	switch t {
	case nil:
		return apiservercel.DynType
	case cel.BoolType:
		return apiservercel.BoolType
	case cel.BytesType:
		return apiservercel.BytesType
	case cel.DoubleType:
		return apiservercel.DoubleType
	case cel.DurationType:
		return apiservercel.DurationType
	case cel.IntType:
		return apiservercel.IntType
	case cel.NullType:
		return apiservercel.NullType
	case cel.StringType:
		return apiservercel.StringType
	case cel.TimestampType:
		return apiservercel.TimestampType
	case cel.UintType:
		return apiservercel.UintType
	}
	switch params := t.Parameters(); {
	case t.Kind() == cel.ListKind && len(params) == 1:
		return apiservercel.NewListType(declTypeOf(params[0]), -1)
	case t.Kind() == cel.MapKind && len(params) == 2:
		return apiservercel.NewMapType(declTypeOf(params[0]), declTypeOf(params[1]), -1)
	}
	return apiservercel.DynType
}
