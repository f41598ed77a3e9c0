package parentcrd

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/util/jsonpath"

	"metacel.dev/metacel/runtime/fieldpath"
)

// columnTypes are the types of a printer column, as the API server accepts them.
var columnTypes = []string{"integer", "number", "string", "boolean", "date"}

// ColumnTypes returns the types a printer column may have, for the policy format's JSON Schema.
func ColumnTypes() []string { return slices.Clone(columnTypes) }

// simpleJSONPath is a jsonPath of field names only, e.g. .spec.replicas: one whose field
// can be looked up in the schema.
var simpleJSONPath = regexp.MustCompile(`^(\.[A-Za-z_$][A-Za-z0-9_$-]*)+$`)

// columns returns the printer columns of the CRD: the declared ones, each checked against the
// schema root, then Synced, Ready and Age.
func (b *schemaBuilder) columns(declared []apiextensionsv1.CustomResourceColumnDefinition, root *apiextensionsv1.JSONSchemaProps) []apiextensionsv1.CustomResourceColumnDefinition {
	taken := map[string]string{"name": "kubectl's own NAME column"}
	for _, c := range printerColumns {
		taken[strings.ToLower(c.Name)] = "metacel's column " + c.Name
	}
	out := make([]apiextensionsv1.CustomResourceColumnDefinition, 0, len(declared)+len(printerColumns))
	for i, c := range declared {
		path := fieldpath.Index(b.base+".printerColumns", i)
		switch by, ok := taken[strings.ToLower(c.Name)]; {
		case strings.TrimSpace(c.Name) == "":
			b.errorf(path+".name", "a column needs a name, the header kubectl get shows, e.g. name: Replicas")
		case ok:
			b.errorf(path+".name", "%q is %s already: give the column another name", c.Name, by)
		default:
			taken[strings.ToLower(c.Name)] = fmt.Sprintf("the column at printerColumns[%d]", i)
		}
		if c.Priority < 0 {
			b.errorf(path+".priority", "expected 0 (shown by kubectl get) or more (shown with -o wide), got %d", c.Priority)
		}
		named, mistake := columnField(path, c.JSONPath, root)
		if mistake == nil {
			c.Type, mistake = columnType(path, c, named)
		}
		if mistake != nil {
			b.errorf(mistake.Path, "%s", mistake.Msg)
		}
		out = append(out, c)
	}
	return append(out, printerColumns...)
}

// columnField checks a column's jsonPath, as kubectl parses it, and returns the schema of the field
// it names when it is a path of field names (nil for another path, or a field under one of any
// content), or what is wrong with it.
func columnField(path, jsonPath string, root *apiextensionsv1.JSONSchemaProps) (*apiextensionsv1.JSONSchemaProps, *Error) {
	path += ".jsonPath"
	if !strings.HasPrefix(jsonPath, ".") {
		return nil, mistakef(path, "%q is not a path from the parent's root: write it with a leading dot, e.g. .spec.replicas", jsonPath)
	}
	if _, err := jsonpath.Parse("column", "{"+jsonPath+"}"); err != nil {
		return nil, mistakef(path, "%q is not a JSONPath kubectl can read: %v", jsonPath, err)
	}
	if !simpleJSONPath.MatchString(jsonPath) {
		return nil, nil
	}
	names := strings.Split(jsonPath[1:], ".")
	if names[0] == "metadata" {
		return metadataField(names[1:]), nil
	}
	s := root
	for i, name := range names {
		switch {
		case s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields, s.AdditionalProperties != nil:
			return nil, nil // any field may be there
		case s.Type != "object":
			return nil, mistakef(path, "%q names a field of .%s, which is %s", jsonPath, strings.Join(names[:i], "."), article(s.Type))
		}
		p, ok := s.Properties[name]
		if !ok {
			return nil, mistakef(path, "%q names no declared field: .%s has no field %q%s", jsonPath, strings.Join(names[:i], "."), name,
				fieldpath.DidYouMean(name, slices.Sorted(maps.Keys(s.Properties))))
		}
		s = &p
	}
	return s, nil
}

// columnType returns a column's type: the declared one, else the type of the field its jsonPath
// names (date for a date-time string); or what is wrong with it.
func columnType(path string, c apiextensionsv1.CustomResourceColumnDefinition, named *apiextensionsv1.JSONSchemaProps) (string, *Error) {
	switch {
	case c.Type != "" && !slices.Contains(columnTypes, c.Type):
		return "", mistakef(path+".type", "unknown column type %q%s: one of %s", c.Type, fieldpath.DidYouMean(c.Type, columnTypes), strings.Join(columnTypes, ", "))
	case c.Type != "":
		return c.Type, nil
	case named == nil:
		return "", mistakef(path, "type is required: one of %s (a column takes the type of the declared field its jsonPath names, and %q names none)",
			strings.Join(columnTypes, ", "), c.JSONPath)
	case named.Type == "string" && named.Format == "date-time":
		return "date", nil
	case slices.Contains(columnTypes, named.Type):
		return named.Type, nil
	}
	return "", mistakef(path, "type is required: %s is %s, which no column type is: one of %s", c.JSONPath, article(named.Type), strings.Join(columnTypes, ", "))
}

// mistakef is a mistake at a policy's field path.
func mistakef(path, format string, args ...any) *Error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// metadataFields are the schemas of the metadata fields a column shows.
var metadataFields = map[string]apiextensionsv1.JSONSchemaProps{
	"name": {Type: "string"}, "namespace": {Type: "string"}, "uid": {Type: "string"},
	"generation":        {Type: "integer"},
	"creationTimestamp": {Type: "string", Format: "date-time"},
	"deletionTimestamp": {Type: "string", Format: "date-time"},
}

// metadataField returns the schema of a field of the parent's metadata, or nil.
func metadataField(names []string) *apiextensionsv1.JSONSchemaProps {
	switch {
	case len(names) == 1:
		if s, ok := metadataFields[names[0]]; ok {
			return &s
		}
	case len(names) == 2 && (names[0] == "labels" || names[0] == "annotations"):
		return &apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	return nil
}
