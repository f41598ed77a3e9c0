package crdinstall

import (
	"fmt"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"

	"metacel.dev/metacel/runtime/contract"
)

// Break is a stored parent that would not survive a new schema: what it would lose or what the
// schema would reject, each at its field.
type Break struct {
	// Parent is namespace/name, or name for a cluster-scoped parent.
	Parent   string
	Problems []string
}

// Checker checks stored parents against a new schema, as the API server would read and validate
// them once the schema is its CRD's.
type Checker struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
}

// NewChecker prepares the checks of a CRD version's schema.
func NewChecker(schema *apiextensionsv1.JSONSchemaProps) (*Checker, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(schema, internal, nil); err != nil {
		return nil, fmt.Errorf("convert the schema: %w", err)
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("the schema is not structural: %w", err)
	}
	v, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("the schema cannot validate: %w", err)
	}
	return &Checker{structural: s, validator: v}, nil
}

// Check returns what a stored parent would lose (fields the schema does not declare, which the
// API server prunes) and what the schema rejects in it, once the API server has given it the
// schema's defaults, as it does to what it reads; none when it survives. The parent is not
// modified.
func (c *Checker) Check(parent map[string]any) []string {
	obj := runtime.DeepCopyJSON(parent)
	structuraldefaulting.Default(obj, c.structural)
	var problems []string
	for _, path := range pruning.PruneWithOptions(obj, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		problems = append(problems, fmt.Sprintf("%s: would be removed (the new schema does not declare it)", path))
	}
	for _, e := range apiservervalidation.ValidateCustomResource(nil, obj, c.validator) {
		problems = append(problems, strings.ReplaceAll(e.Error(), ":  in body", ":"))
	}
	return problems
}

// Breaks checks each stored parent against the new schema and returns the first max that would
// not survive it, and how many would not.
func Breaks(schema *apiextensionsv1.JSONSchemaProps, parents []map[string]any, max int) ([]Break, int, error) {
	c, err := NewChecker(schema)
	if err != nil {
		return nil, 0, err
	}
	var out []Break
	n := 0
	for _, p := range parents {
		problems := c.Check(p)
		if len(problems) == 0 {
			continue
		}
		n++
		if len(out) < max {
			out = append(out, Break{Parent: parentName(p), Problems: problems})
		}
	}
	return out, n, nil
}

func parentName(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		return ns + "/" + name
	}
	return name
}

// BreakingMessage says why a CRD change is refused: the parents that would not survive it and
// what of each, and how to go ahead.
func BreakingMessage(crd string, breaks []Break, total int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "the new parentSchema would break %d stored parent(s), so the CRD %q is left as it is and the running version keeps serving: ", total, crd)
	for i, br := range breaks {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", br.Parent, strings.Join(br.Problems, ", "))
	}
	if more := total - len(breaks); more > 0 {
		fmt.Fprintf(&b, "; and %d more", more)
	}
	fmt.Fprintf(&b, ". Keep the fields they use (add a field, with a default, rather than rename or narrow one), change the parents first, "+
		"or annotate the policy %s: \"true\" to apply it anyway (the API server then drops the removed fields)", contract.AnnotationAllowBreakingSchemaChange)
	return b.String()
}
