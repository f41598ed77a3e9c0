package builtinschema

import (
	"bytes"
	_ "embed"
	"encoding/gob"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// stored is client-go's schema of the built-in kinds, its types encoded as gob.
//
//go:embed schema.gob
var stored []byte

// Parser returns the structured-merge-diff parser of the built-in kinds' types, by their OpenAPI
// names (io.k8s.api.core.v1.Pod). It is built once, and shared: it must not be modified.
var Parser = sync.OnceValue(func() *typed.Parser {
	types, err := decode(stored)
	if err != nil {
		return clientGos()
	}
	return &typed.Parser{Schema: smdschema.Schema{Types: types}}
})

// TypeConverter returns a converter of built-in objects to typed values of Parser's schema, as
// client-go's applyconfigurations.NewTypeConverter(scheme.Scheme), without its parse.
var TypeConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return managedfields.NewSchemeTypeConverter(scheme.Scheme, Parser())
})

// clientGos returns the parser client-go builds from its YAML.
func clientGos() *typed.Parser {
	configMap := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
	tv, err := applyconfigurations.NewTypeConverter(scheme.Scheme).ObjectToTyped(configMap)
	if err != nil {
		panic("client-go's schema of the built-in kinds has no ConfigMap: " + err.Error())
	}
	return &typed.Parser{Schema: smdschema.Schema{Types: tv.Schema().Types}}
}

// decode reads types written as gob (by encode, in this package's test, which writes schema.gob).
func decode(b []byte) ([]smdschema.TypeDef, error) {
	var types []smdschema.TypeDef
	err := gob.NewDecoder(bytes.NewReader(b)).Decode(&types)
	return types, err
}

func init() {
	// the types of the defaults of some fields, as client-go's YAML parser reads them
	gob.Register(map[any]any{})
	gob.Register([]any{})
}
