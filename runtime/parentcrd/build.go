package parentcrd

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilptr "k8s.io/utils/ptr"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/fieldpath"
)

// Bounds a declared field gets when it states none, so that the cost of the CEL that reads it is
// estimated from sizes the API server enforces rather than from its request limit (3 MB, which
// makes a walk over an unbounded list of strings too dear to load). They let a policy walk a list
// once with string functions (h.contains('.') for every item costs about 41,000 of the 1,000,000
// an expression may); a nested walk, or a longer value, needs bounds of its own. A string with an
// enum is bounded by its values.
const (
	DefaultMaxLength     = 1024
	DefaultMaxItems      = 100
	DefaultMaxProperties = 100
)

// parentSchemaPath is where a policy declares its parent's schema.
const parentSchemaPath = "spec.parentSchema"

// fieldTypes are the types a declared field may have.
var fieldTypes = []string{"string", "integer", "number", "boolean", "object", "array"}

// typeAliases are the type names of other languages a field's type is easily mistaken for.
var typeAliases = map[string]string{
	"int": "integer", "int32": "integer", "int64": "integer", "float": "number", "double": "number",
	"bool": "boolean", "str": "string", "map": "object", "dict": "object", "list": "array",
}

// fieldKeys are the keys a declared field may have, with the types each applies to (none: every
// type).
var fieldKeys = map[string][]string{
	"type": nil, "description": nil, "required": nil, "default": nil,
	"enum":    {"string", "integer", "number"},
	"minimum": {"integer", "number"}, "maximum": {"integer", "number"},
	"minLength": {"string"}, "maxLength": {"string"}, "pattern": {"string"},
	"minItems": {"array"}, "maxItems": {"array"}, "items": {"array"},
	"properties": {"object"}, "additionalProperties": {"object"}, "maxProperties": {"object"},
	"format":    {"string", "integer", "number"},
	"immutable": nil, rulesKey: nil,
}

// runtimeStatusSchemas are the status fields metacel writes, as the generated CRD declares them.
var runtimeStatusSchemas = map[string]apiextensionsv1.JSONSchemaProps{
	"observedGeneration": {Type: "integer", Format: "int64", Minimum: utilptr.To(0.0),
		Description: "The .metadata.generation last acted on by metacel."},
	"conditions": {
		Type: "array", MaxItems: utilptr.To[int64](contract.MaxConditions),
		Description:  "Conditions (metav1.Condition) metacel reports: Synced and Ready.",
		XListType:    utilptr.To("map"),
		XListMapKeys: []string{"type"},
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Required: []string{"type", "status"},
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"type":   {Type: "string", MaxLength: utilptr.To[int64](316), Description: "Type of condition in CamelCase."},
				"status": {Type: "string", Enum: jsonValues("True", "False", "Unknown"), Description: "Status of the condition: True, False or Unknown."},
				"reason": {Type: "string", MaxLength: utilptr.To[int64](1024),
					Description: "Programmatic identifier of the reason for the last transition, in CamelCase."},
				"message":            {Type: "string", MaxLength: utilptr.To[int64](contract.MaxConditionMessage), Description: "Human-readable message about the last transition."},
				"lastTransitionTime": {Type: "string", Format: "date-time", Description: "Last time the condition changed from one status to another."},
				"observedGeneration": {Type: "integer", Format: "int64", Minimum: utilptr.To(0.0),
					Description: "The .metadata.generation the condition was set for."},
			},
		}},
	},
}

// printerColumns show the parent's conditions in kubectl get.
var printerColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Synced", Type: "string", JSONPath: `.status.conditions[?(@.type=="Synced")].status`},
	{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
}

// Declaration is a parent resource as a policy declares it: spec.parentResource gives its
// group/version and plural, spec.parentSchema the rest.
type Declaration struct {
	// APIVersion is the parent's group/version, e.g. example.com/v1.
	APIVersion string
	// Names are the CRD's names: Plural is the parent resource, Kind, Singular, ListKind and
	// ShortNames are declared; an empty Singular or ListKind gets its default (the lowercase kind,
	// the kind followed by List).
	Names apiextensionsv1.CustomResourceDefinitionNames
	// Scope is Namespaced or Cluster; empty is Namespaced.
	Scope apiextensionsv1.ResourceScope
	// Description says what a parent is, for kubectl explain.
	Description string
	// Spec and Status declare the fields of the parent's spec and status, as the policy's YAML
	// decodes them (integers are int64): each value a type name or a field (FieldKeys).
	Spec, Status map[string]any
	// Rules are CEL rules on the whole parent (self), which the API server checks when a parent
	// is written (x-kubernetes-validations of the schema's root).
	Rules []apiextensionsv1.ValidationRule
	// PrinterColumns are the columns kubectl get shows before Synced, Ready and Age; a column
	// without a type takes it from the field its jsonPath names.
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition
	// Versions are the parent's other versions, beside APIVersion's (which the fields above
	// declare); a CRD with more than one version converts with the runtime's webhook.
	Versions []Version
	// StorageVersion is the version the API server stores parents at: APIVersion's when empty.
	StorageVersion string
}

// Version is one of a parent's other versions.
type Version struct {
	// Name is the version, e.g. v1alpha1.
	Name string
	// Path is the policy's field path that declares it, e.g. spec.parentSchema.versions[0].
	Path string
	// Served says whether the API server serves it; Deprecated has it warn with
	// DeprecationWarning (its own when empty).
	Served, Deprecated bool
	DeprecationWarning string
	// Spec, Status, Rules and PrinterColumns are the version's, as Declaration's.
	Spec, Status   map[string]any
	Rules          []apiextensionsv1.ValidationRule
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition
}

// WebhookPath is the path of the runtime's conversion webhook.
const WebhookPath = "/convert"

// DefaultWebhookService is the Service of the runtime's conversion webhook in a CRD that `metacel
// crd` prints (deploy/ and the Helm chart's); the runtime writes its own when it installs the CRD.
var DefaultWebhookService = apiextensionsv1.ServiceReference{Namespace: "metacel-system", Name: "metacel-webhook", Path: utilptr.To(WebhookPath), Port: utilptr.To[int32](443)}

// Error is a mistake in a declaration, at the policy's field path that declares it (e.g.
// spec.parentSchema.spec.replicas.default), for the loader to place at its line.
type Error struct {
	Path string
	Msg  string
}

// Build returns the CustomResourceDefinition a declaration declares, as `metacel crd` prints it
// and the runtime installs it: the group, version and plural of the parent resource, one served
// and stored version with the status subresource, the declared printer columns then those of the
// Synced and Ready conditions, and a structural schema of the declared spec and status (with
// their formats, rules and immutable fields, and the rules of the whole parent), the status with
// the fields metacel writes (conditions, observedGeneration). Strings, lists and maps declared
// without a bound get DefaultMaxLength, DefaultMaxItems and DefaultMaxProperties; an object whose
// fields have defaults and none is required defaults to {}, so that its fields' defaults apply
// when it is left out. The schema, its rules and its defaults are checked with the API server's
// own code, so that the API server accepts the CRD. A declaration with mistakes has no CRD: every
// mistake is returned, in the order found. The declaration is of a policy that passed
// validation: an apiVersion that does not parse is the validator's to report.
func Build(d Declaration) (*apiextensionsv1.CustomResourceDefinition, []Error) {
	b := &schemaBuilder{policyPaths: map[string]string{}, kind: d.Names.Kind, base: parentSchemaPath}
	gv := b.groupVersion(d.APIVersion)
	names := b.names(d.Names)
	scope := b.scope(d.Scope)
	hub := Version{Name: gv.Version, Path: parentSchemaPath, Served: true, Spec: d.Spec, Status: d.Status, Rules: d.Rules, PrinterColumns: d.PrinterColumns}
	versions := append([]Version{hub}, d.Versions...)
	storage := cmp.Or(d.StorageVersion, gv.Version)
	b.checkVersions(versions, storage)
	var out []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range versions {
		out = append(out, b.version(d.Description, v, storage))
	}
	if len(b.errs) > 0 {
		return nil, b.errs
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: names.Plural + "." + gv.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gv.Group, Names: names, Scope: scope, Versions: out,
		},
	}
	if len(out) > 1 {
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ConversionReviewVersions: []string{"v1"},
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{Service: DefaultWebhookService.DeepCopy()},
			},
		}
	}
	return crd, nil
}

// version returns one version of the CRD: its schema, checked as the API server checks it, the
// status subresource, and its printer columns.
func (b *schemaBuilder) version(description string, v Version, storage string) apiextensionsv1.CustomResourceDefinitionVersion {
	vb := &schemaBuilder{policyPaths: map[string]string{}, kind: b.kind, base: v.Path}
	root := vb.rootSchema(description, v)
	columns := vb.columns(v.PrinterColumns, root)
	if len(vb.errs) == 0 {
		vb.checkWithAPIServer(root)
	}
	b.errs = append(b.errs, vb.errs...)
	out := apiextensionsv1.CustomResourceDefinitionVersion{
		Name: v.Name, Served: v.Served, Storage: v.Name == storage, Deprecated: v.Deprecated,
		Schema:                   &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: root},
		Subresources:             &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		AdditionalPrinterColumns: columns,
	}
	if v.Deprecated && v.DeprecationWarning != "" {
		out.DeprecationWarning = utilptr.To(v.DeprecationWarning)
	}
	return out
}

// checkVersions checks the versions' names, that the policy's version (the first) is served, and
// that the storage version is one of them.
func (b *schemaBuilder) checkVersions(versions []Version, storage string) {
	seen := map[string]bool{}
	var names []string
	for i, v := range versions {
		names = append(names, v.Name)
		switch {
		case i == 0:
		case v.Name == "":
			b.errorf(v.Path+".name", "a version needs a name, e.g. name: v1alpha1")
		case seen[v.Name]:
			b.errorf(v.Path+".name", "the version %q is declared twice (spec.parentResource.apiVersion names the policy's version): give each version one entry", v.Name)
		case len(validation.IsDNS1035Label(v.Name)) > 0:
			b.errorf(v.Path+".name", "the version %q of a custom resource must be a DNS label starting with a letter, e.g. v1alpha1", v.Name)
		case v.DeprecationWarning != "" && !v.Deprecated:
			b.errorf(v.Path+".deprecationWarning", "is given but the version is not deprecated: add deprecated: true, or remove the warning")
		}
		seen[v.Name] = true
	}
	if !seen[storage] {
		b.errorf(parentSchemaPath+".storageVersion", "%q is not a version of the parent: one of %s", storage, strings.Join(names, ", "))
	}
	for _, v := range versions {
		if v.Name == storage && !v.Served {
			b.errorf(v.Path+".served", "the storage version %q must be served", storage)
		}
	}
}

// FieldTypes returns the types a declared field may have, for the policy format's JSON Schema.
func FieldTypes() []string { return slices.Clone(fieldTypes) }

// FieldKeys returns the keys a declared field written as an object may have, sorted, for the
// policy format's JSON Schema.
func FieldKeys() []string { return slices.Sorted(maps.Keys(fieldKeys)) }

// schemaBuilder turns a Declaration into a CRD's parts, collecting every error.
type schemaBuilder struct {
	errs []Error
	// policyPaths maps the path of each schema built, as the API server's errors name it, to the
	// policy's field path that declares it.
	policyPaths map[string]string
	// kind is the parent's kind, for the messages of the rules metacel writes.
	kind string
	// base is the policy's field path that declares the version being built
	base string
}

// errorf records a mistake, once: the rules immutable stands for may be refused for the same
// reason.
func (b *schemaBuilder) errorf(path, format string, args ...any) {
	e := Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	if !slices.Contains(b.errs, e) {
		b.errs = append(b.errs, e)
	}
}

// groupVersion checks that the parent's API group can hold a custom resource.
func (b *schemaBuilder) groupVersion(apiVersion string) schema.GroupVersion {
	const path = "spec.parentResource.apiVersion"
	gv, err := schema.ParseGroupVersion(apiVersion)
	switch {
	case err != nil:
		// Validate reports it
	case gv.Group == "":
		b.errorf(path, "%q is in the core group, which custom resources cannot join: give the parent a group of your own, e.g. example.com/v1", apiVersion)
	case !strings.Contains(gv.Group, ".") || len(validation.IsDNS1123Subdomain(gv.Group)) > 0:
		b.errorf(path, "the group %q of a custom resource must be a domain name with at least one dot, e.g. example.com", gv.Group)
	case isKubernetesGroup(gv.Group):
		b.errorf(path, "the group %q is reserved for Kubernetes' own APIs: use a domain of your own", gv.Group)
	case len(validation.IsDNS1035Label(gv.Version)) > 0:
		b.errorf(path, "the version %q of a custom resource must be a DNS label starting with a letter, e.g. v1", gv.Version)
	}
	return gv
}

func isKubernetesGroup(group string) bool {
	for _, g := range []string{"k8s.io", "kubernetes.io"} {
		if group == g || strings.HasSuffix(group, "."+g) {
			return true
		}
	}
	return false
}

// names returns the CRD's names, checked, with the defaults of those not declared.
func (b *schemaBuilder) names(n apiextensionsv1.CustomResourceDefinitionNames) apiextensionsv1.CustomResourceDefinitionNames {
	if n.Kind == "" {
		b.errorf(parentSchemaPath, "kind is required: the kind of the parent's objects, e.g. kind: Website")
		return n
	}
	if n.Singular == "" {
		n.Singular = strings.ToLower(n.Kind)
	}
	if n.ListKind == "" {
		n.ListKind = n.Kind + "List"
	}
	b.dnsLabel("spec.parentResource.resource", n.Plural, n.Plural)
	b.dnsLabel(parentSchemaPath+".kind", n.Kind, strings.ToLower(n.Kind))
	b.dnsLabel(parentSchemaPath+".singular", n.Singular, n.Singular)
	b.dnsLabel(parentSchemaPath+".listKind", n.ListKind, strings.ToLower(n.ListKind))
	if n.ListKind == n.Kind {
		b.errorf(parentSchemaPath+".listKind", "must differ from the kind %q", n.Kind)
	}
	for i, s := range n.ShortNames {
		b.dnsLabel(fieldpath.Index(parentSchemaPath+".shortNames", i), s, s)
	}
	return n
}

// dnsLabel checks a name the API server wants, as lowered, to be a DNS-1035 label.
func (b *schemaBuilder) dnsLabel(path, name, lowered string) {
	if errs := validation.IsDNS1035Label(lowered); len(errs) > 0 {
		b.errorf(path, "%q is not a valid name here: %s", name, strings.Join(errs, "; "))
	}
}

func (b *schemaBuilder) scope(s apiextensionsv1.ResourceScope) apiextensionsv1.ResourceScope {
	scopes := []string{string(apiextensionsv1.NamespaceScoped), string(apiextensionsv1.ClusterScoped)}
	switch {
	case s == "":
		return apiextensionsv1.NamespaceScoped
	case !slices.Contains(scopes, string(s)):
		b.errorf(parentSchemaPath+".scope", "must be Namespaced or Cluster, got %q%s", s, fieldpath.DidYouMean(string(s), scopes))
	}
	return s
}

// rootSchema returns the schema of the parent's objects at version v.
func (b *schemaBuilder) rootSchema(description string, v Version) *apiextensionsv1.JSONSchemaProps {
	at := field.NewPath("openAPIV3Schema")
	b.record(at, b.base)
	spec := b.object(b.base+".spec", at.Child("properties").Key("spec"), v.Spec)
	spec.Description = "Desired state, read by the policy."
	defaultEmpty(&spec)
	status := b.object(b.base+".status", at.Child("properties").Key("status"), v.Status)
	status.Description = "Observed state, written by metacel."
	for _, name := range slices.Sorted(maps.Keys(runtimeStatusSchemas)) {
		if _, ok := status.Properties[name]; ok {
			b.errorf(fieldpath.Field(b.base+".status", name), "metacel declares status.%s itself, as the field it writes: remove it", name)
		}
		own := runtimeStatusSchemas[name]
		status.Properties[name] = *own.DeepCopy()
	}
	root := &apiextensionsv1.JSONSchemaProps{
		Type:         "object",
		Description:  description,
		XValidations: b.rootRules(at, v.Rules),
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   {Type: "object"},
			"spec":       spec,
			"status":     status,
		},
	}
	if len(spec.Required) > 0 {
		root.Required = []string{"spec"}
	}
	return root
}

// record notes that the schema at at is declared at the policy's path.
func (b *schemaBuilder) record(at *field.Path, path string) {
	b.policyPaths[at.String()] = path
}

// object returns the schema of an object with the declared fields; path and at name the fields'
// parent (their paths are path.<name> and at.properties[<name>]).
func (b *schemaBuilder) object(path string, at *field.Path, fields map[string]any) apiextensionsv1.JSONSchemaProps {
	s := apiextensionsv1.JSONSchemaProps{Type: "object"}
	b.fillObject(path, at, fields, &s)
	return s
}

// fillObject gives the object s the declared fields, and the rules that keep its immutable fields
// present or absent.
func (b *schemaBuilder) fillObject(path string, at *field.Path, fields map[string]any, s *apiextensionsv1.JSONSchemaProps) {
	s.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		fieldPath := fieldpath.Field(path, name)
		p, required := b.field(fieldPath, at.Child("properties").Key(name), fields[name], true)
		s.Properties[name] = p
		if required {
			s.Required = append(s.Required, name)
		}
		b.addPresence(fieldPath, at, name, fields[name], p, required, s)
	}
}

// defaultEmpty defaults an object to {} when some of its fields have defaults and none is
// required, so that its fields' defaults apply when it is left out; but not when its own rules
// refuse that default (self.min <= self.max, with no default for max): the API server checks a
// default against the rules, and would refuse the CRD for a default the author never wrote.
func defaultEmpty(s *apiextensionsv1.JSONSchemaProps) {
	if s.Default != nil || len(s.Required) > 0 || !slices.ContainsFunc(slices.Collect(maps.Values(s.Properties)), hasDefault) {
		return
	}
	s.Default = &apiextensionsv1.JSON{Raw: []byte("{}")}
	if len(s.XValidations) > 0 && !defaultAccepted(s) {
		s.Default = nil
	}
}

func hasDefault(p apiextensionsv1.JSONSchemaProps) bool { return p.Default != nil }

// defaultAccepted reports whether the API server accepts the default of the object s, checked
// against s's schema and rules as it checks a CRD's defaults. s is checked as a field of an
// object, as it stands in the CRD: at the root, its fields kind, apiVersion and metadata would be
// read as an object's own.
func defaultAccepted(s *apiextensionsv1.JSONSchemaProps) bool {
	wrapped := &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"object": *s}}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(wrapped, internal, nil); err != nil {
		return false
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return false
	}
	errs, err := structuraldefaulting.ValidateDefaults(context.Background(), field.NewPath("object"), structural, false, true)
	return err == nil && len(errs) == 0
}

// field returns the schema of one declared field, and whether it is required. inObject says
// that it is a field of an object, which alone may be required.
func (b *schemaBuilder) field(path string, at *field.Path, v any, inObject bool) (apiextensionsv1.JSONSchemaProps, bool) {
	b.record(at, path)
	switch x := v.(type) {
	case string:
		t, ok := b.typeName(path, x)
		if !ok {
			return apiextensionsv1.JSONSchemaProps{}, false
		}
		if t == "array" {
			b.errorf(path, "a list needs the type of its items: write {type: array, items: string} (or another type)")
		}
		return bounded(apiextensionsv1.JSONSchemaProps{Type: t}), false
	case map[string]any:
		return b.fieldSchema(path, at, x, inObject)
	}
	b.errorf(path, "expected a type (%s) or a field such as {type: string, maxLength: 64}, got %s", strings.Join(fieldTypes, ", "), describeValue(v))
	return apiextensionsv1.JSONSchemaProps{}, false
}

// typeName checks a field's type.
func (b *schemaBuilder) typeName(path, t string) (string, bool) {
	if slices.Contains(fieldTypes, t) {
		return t, true
	}
	hint := fieldpath.DidYouMean(t, fieldTypes)
	if alias, ok := typeAliases[strings.ToLower(t)]; ok {
		hint = fmt.Sprintf(" (did you mean %q?)", alias)
	}
	b.errorf(path, "unknown type %q%s: a field's type is one of %s", t, hint, strings.Join(fieldTypes, ", "))
	return "", false
}

// fieldSchema returns the schema of a field written as an object of keys.
func (b *schemaBuilder) fieldSchema(path string, at *field.Path, m map[string]any, inObject bool) (apiextensionsv1.JSONSchemaProps, bool) {
	b.unknownKeys(path, m)
	t, ok := b.fieldType(path, m)
	if !ok {
		return apiextensionsv1.JSONSchemaProps{}, false
	}
	b.keysApply(path, t, m)
	s := apiextensionsv1.JSONSchemaProps{Type: t}
	s.Description = b.str(path, m, "description")
	s.Pattern = b.pattern(path, m)
	s.MinLength, s.MaxLength = b.count(path, m, "minLength"), b.count(path, m, "maxLength")
	s.MinItems, s.MaxItems = b.count(path, m, "minItems"), b.count(path, m, "maxItems")
	s.MaxProperties = b.count(path, m, "maxProperties")
	s.Minimum, s.Maximum = b.number(path, m, "minimum"), b.number(path, m, "maximum")
	s.Default = b.json(path, m, "default")
	s.Enum = b.enum(path, t, m)
	s.Format = b.format(path, t, m)
	s.XValidations = b.rules(path, at, m)
	b.ordered(path, "minLength", "maxLength", s.MinLength, s.MaxLength)
	b.ordered(path, "minItems", "maxItems", s.MinItems, s.MaxItems)
	if s.Minimum != nil && s.Maximum != nil && *s.Minimum > *s.Maximum {
		b.errorf(path+".minimum", "%v is more than the maximum %v", *s.Minimum, *s.Maximum)
	}
	b.nested(path, at, m, &s)
	b.addImmutable(path, at, m, &s)
	return bounded(s), b.required(path, m, inObject)
}

// unknownKeys reports the keys a field does not have, with the key most likely meant.
func (b *schemaBuilder) unknownKeys(path string, m map[string]any) {
	keys := slices.Sorted(maps.Keys(fieldKeys))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if _, ok := fieldKeys[k]; ok {
			continue
		}
		hint := fieldpath.DidYouMean(k, keys)
		if hint == "" {
			hint = fmt.Sprintf(": a field has the keys %s", strings.Join(keys, ", "))
			if _, isType := m[k].(string); isType || isObject(m[k]) {
				hint += fmt.Sprintf("; to declare a field %q of an object, list it under properties", k)
			}
		}
		b.errorf(fieldpath.Field(path, k), "unknown key %q%s", k, hint)
	}
}

func isObject(v any) bool { _, ok := v.(map[string]any); return ok }

// fieldType returns a field's type: its type key, else object for one with properties or
// additionalProperties, array for one with items.
func (b *schemaBuilder) fieldType(path string, m map[string]any) (string, bool) {
	if v, ok := m["type"]; ok {
		t, isString := v.(string)
		if !isString {
			b.errorf(path+".type", "expected a type name (%s), got %s", strings.Join(fieldTypes, ", "), describeValue(v))
			return "", false
		}
		return b.typeName(path+".type", t)
	}
	_, props := m["properties"]
	_, values := m["additionalProperties"]
	_, items := m["items"]
	switch {
	case props || values:
		return "object", true
	case items:
		return "array", true
	}
	b.errorf(path, "type is required: one of %s", strings.Join(fieldTypes, ", "))
	return "", false
}

// keysApply reports the keys that do not apply to a field of type t.
func (b *schemaBuilder) keysApply(path, t string, m map[string]any) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if types := fieldKeys[k]; len(types) > 0 && !slices.Contains(types, t) {
			b.errorf(fieldpath.Field(path, k), "%s applies to fields of type %s, not to this %s", k, orList(types), t)
		}
	}
	if t == "array" && m["items"] == nil {
		b.errorf(path, "a list needs items: the type of its items, e.g. items: string")
	}
	if m["properties"] != nil && m["additionalProperties"] != nil {
		b.errorf(path+".additionalProperties", "an object has either properties (named fields) or additionalProperties (a map's values), not both")
	}
}

// nested fills the schemas of an array's items and an object's fields or values.
func (b *schemaBuilder) nested(path string, at *field.Path, m map[string]any, s *apiextensionsv1.JSONSchemaProps) {
	switch s.Type {
	case "array":
		if v, ok := m["items"]; ok && v != nil {
			item, _ := b.field(path+".items", at.Child("items"), v, false)
			s.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}
		}
	case "object":
		if v, ok := m["additionalProperties"]; ok && v != nil {
			value, _ := b.field(path+".additionalProperties", at.Child("additionalProperties"), v, false)
			s.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &value}
		}
		v, ok := m["properties"]
		if !ok {
			return
		}
		fields, isMap := v.(map[string]any)
		if !isMap {
			b.errorf(path+".properties", "expected an object of fields by name, got %s", describeValue(v))
			return
		}
		b.fillObject(path+".properties", at, fields, s)
		defaultEmpty(s)
	}
}

// bounded gives a field the bounds it needs and does not state, and lets an object declared
// with no fields hold any.
func bounded(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	switch {
	case s.Type == "string" && s.MaxLength == nil && len(s.Enum) == 0:
		s.MaxLength = utilptr.To[int64](DefaultMaxLength)
	case s.Type == "array" && s.MaxItems == nil:
		s.MaxItems = utilptr.To[int64](DefaultMaxItems)
	case s.Type == "object" && s.AdditionalProperties != nil && s.MaxProperties == nil:
		s.MaxProperties = utilptr.To[int64](DefaultMaxProperties)
	case s.Type == "object" && s.Properties == nil && s.AdditionalProperties == nil:
		s.XPreserveUnknownFields = utilptr.To(true)
	}
	return s
}

func (b *schemaBuilder) required(path string, m map[string]any, inObject bool) bool {
	v, ok := m["required"]
	if !ok {
		return false
	}
	r, isBool := v.(bool)
	switch {
	case !isBool:
		b.errorf(path+".required", "expected true or false, got %s", describeValue(v))
	case r && !inObject:
		b.errorf(path+".required", "only a field of an object can be required, not a list's items or a map's values")
	}
	return r
}

func (b *schemaBuilder) str(path string, m map[string]any, key string) string {
	v, ok := m[key]
	if !ok {
		return ""
	}
	s, isString := v.(string)
	if !isString {
		b.errorf(path+"."+key, "expected a string, got %s", describeValue(v))
	}
	return s
}

// pattern returns a field's pattern, which must be a regular expression.
func (b *schemaBuilder) pattern(path string, m map[string]any) string {
	p := b.str(path, m, "pattern")
	if _, err := regexp.Compile(p); err != nil {
		b.errorf(path+".pattern", "%q is not a regular expression: %v", p, err)
	}
	return p
}

// count returns a non-negative integer key, or nil.
func (b *schemaBuilder) count(path string, m map[string]any, key string) *int64 {
	v, ok := m[key]
	if !ok {
		return nil
	}
	n, isInt := v.(int64)
	if !isInt || n < 0 {
		b.errorf(path+"."+key, "expected a count (an integer, 0 or more), got %s", describeValue(v))
		return nil
	}
	return &n
}

// number returns a numeric key, or nil.
func (b *schemaBuilder) number(path string, m map[string]any, key string) *float64 {
	switch n := m[key].(type) {
	case nil:
		if _, ok := m[key]; ok {
			b.errorf(path+"."+key, "expected a number, got null")
		}
		return nil
	case int64:
		return utilptr.To(float64(n))
	case float64:
		return &n
	}
	b.errorf(path+"."+key, "expected a number, got %s", describeValue(m[key]))
	return nil
}

// ordered reports a lower bound above its upper bound.
func (b *schemaBuilder) ordered(path, lowKey, highKey string, low, high *int64) {
	if low != nil && high != nil && *low > *high {
		b.errorf(path+"."+lowKey, "%d is more than the %s %d", *low, highKey, *high)
	}
}

// json returns a key's value as JSON, or nil; the API server's checks judge it against the schema.
func (b *schemaBuilder) json(path string, m map[string]any, key string) *apiextensionsv1.JSON {
	v, ok := m[key]
	if !ok {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		b.errorf(path+"."+key, "%v", err)
		return nil
	}
	return &apiextensionsv1.JSON{Raw: raw}
}

// enum returns the values a field may take, each of the field's type.
func (b *schemaBuilder) enum(path, t string, m map[string]any) []apiextensionsv1.JSON {
	v, ok := m["enum"]
	if !ok {
		return nil
	}
	values, isList := v.([]any)
	if !isList || len(values) == 0 {
		b.errorf(path+".enum", "expected a list of the values the field may take, got %s", describeValue(v))
		return nil
	}
	out := make([]apiextensionsv1.JSON, 0, len(values))
	for i, x := range values {
		if !isOfType(x, t) {
			b.errorf(fieldpath.Index(path+".enum", i), "expected %s, as the field's type says, got %s", article(t), describeValue(x))
			continue
		}
		raw, _ := json.Marshal(x) // a scalar
		out = append(out, apiextensionsv1.JSON{Raw: raw})
	}
	return out
}

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func isOfType(v any, t string) bool {
	switch v.(type) {
	case string:
		return t == "string"
	case int64:
		return t == "integer" || t == "number"
	case float64:
		return t == "number"
	}
	return false
}

func article(t string) string {
	if t == "integer" || t == "object" || t == "array" {
		return "an " + t
	}
	return "a " + t
}

// describeValue names the type of a decoded YAML value the way a person reads the YAML.
func describeValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("a string %q", x)
	case int64:
		return fmt.Sprintf("an integer %d", x)
	case float64:
		return fmt.Sprintf("a number %v", x)
	case bool:
		return fmt.Sprintf("a boolean %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// checkWithAPIServer checks the schema as the API server checks a CRD's: structural, its CEL
// rules (checkRules), and every default valid against its schema and rules and already pruned.
// Each finding is placed at the field that declares it.
func (b *schemaBuilder) checkWithAPIServer(root *apiextensionsv1.JSONSchemaProps) {
	at := field.NewPath("openAPIV3Schema")
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(root, internal, nil); err != nil {
		b.errorf(b.base, "%v", err)
		return
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		b.errorf(b.base, "the schema is not structural: %v", err)
		return
	}
	errs := structuralschema.ValidateStructural(at, s)
	if len(errs) == 0 {
		b.checkRules(at, s, root)
	}
	if len(errs) == 0 && len(b.errs) == 0 {
		// the defaults are checked against the rules too, each with a cost limit, so that
		// nothing can take long to cancel
		defaultErrs, err := structuraldefaulting.ValidateDefaults(context.Background(), at, s, true, true)
		if err != nil {
			b.errorf(b.base, "check the defaults: %v", err)
		}
		errs = defaultErrs
	}
	for _, e := range errs {
		b.errorf(b.policyPath(e.Field), "the API server refuses it: %s", strings.ReplaceAll(e.ErrorBody(), ":  in body ", ": "))
	}
}

// policyPath returns the policy's field path of a path of the generated schema: the path that
// declares its closest recorded ancestor, and the rest.
func (b *schemaBuilder) policyPath(crdPath string) string {
	for p := crdPath; p != ""; {
		if path, ok := b.policyPaths[p]; ok {
			return path + crdPath[len(p):]
		}
		cut := strings.LastIndexAny(p, ".[")
		if cut < 0 {
			break
		}
		p = p[:cut]
	}
	return b.base
}

// jsonValues returns strings as JSON values, for an enum.
func jsonValues(values ...string) []apiextensionsv1.JSON {
	out := make([]apiextensionsv1.JSON, len(values))
	for i, v := range values {
		out[i] = apiextensionsv1.JSON{Raw: []byte(`"` + v + `"`)}
	}
	return out
}
