package kinds

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// gadgetCRD has a field of each kind a CRD can declare that the check must read as the API server does.
const gadgetCRD = `
type: object
properties:
  spec:
    type: object
    properties:
      replicas: {type: integer}
      port: {x-kubernetes-int-or-string: true}
      url: {type: string, format: uri}
      free: {type: object, x-kubernetes-preserve-unknown-fields: true}
      template: {type: object, x-kubernetes-embedded-resource: true, x-kubernetes-preserve-unknown-fields: true}
      items:
        type: array
        x-kubernetes-list-type: map
        x-kubernetes-list-map-keys: [name]
        items: {type: object, required: [name], properties: {name: {type: string}, size: {type: integer}}}
`

func gadgetSchema(t testing.TB) *ObjectSchema {
	t.Helper()
	props := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.UnmarshalStrict([]byte(gadgetCRD), props); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
	s, err := SchemaOf(Info{GVR: gvr, Kind: "Gadget", Schema: props})
	if err != nil || s == nil {
		t.Fatalf("schema of the gadget CRD: %v", err)
	}
	return s
}

func TestObjectSchemaValidate(t *testing.T) {
	pod := &Info{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod"}
	deployment := &Info{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment"}
	tests := []struct {
		name   string
		info   *Info // nil: the gadget CRD
		object string
		want   string // "" when valid
	}{
		{"a valid Pod", pod, `{metadata: {name: p, labels: {a: b}}, spec: {containers: [{name: c, image: i, ports: [{containerPort: 80}], resources: {limits: {cpu: 500m, memory: 1}}}]}}`, ""},
		{"a misspelt field of a built-in kind", pod, `{spec: {initContainer: []}}`, ".spec.initContainer: field not declared in schema"},
		{"a string where a built-in kind wants a number", deployment, `{spec: {replicas: "three"}}`, ".spec.replicas: expected numeric"},
		{"a number where a label wants a string", pod, `{metadata: {labels: {version: 1}}}`, `.metadata.labels.version: expected string`},
		{"an int-or-string of a built-in kind takes both", &Info{GVR: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Kind: "Service"},
			`{spec: {ports: [{port: 80, targetPort: http}, {port: 81, targetPort: 8081}]}}`, ""},
		{"two containers with one name", pod, `{spec: {containers: [{name: c}, {name: c}]}}`, "duplicate entries for key"},
		{"a valid gadget", nil, `{metadata: {name: g}, spec: {replicas: 2, port: http, url: "https://x", free: {any: [thing]}, template: {apiVersion: v1, kind: Pod, metadata: {name: x}, spec: {anything: 1}}, items: [{name: a, size: 1}]}}`, ""},
		{"a misspelt field of a custom kind", nil, `{spec: {replica: 2}}`, ".spec.replica: field not declared in schema"},
		{"a string where a custom kind wants an integer", nil, `{spec: {replicas: "2"}}`, ".spec.replicas: expected numeric"},
		{"a custom kind's metadata is an ObjectMeta", nil, `{metadata: {lables: {}}}`, ".metadata.lables: field not declared in schema"},
		{"an int-or-string of a custom kind is no object", nil, `{spec: {port: {a: 1}}}`, ".spec.port: expected"},
		{"a string with a format is a string", nil, `{spec: {url: 1}}`, ".spec.url: expected string"},
		{"an embedded resource's metadata is an ObjectMeta", nil, `{spec: {template: {metadata: {nme: x}}}}`, ".spec.template.metadata.nme: field not declared in schema"},
		{"a keyed list of a custom kind needs its keys", nil, `{spec: {items: [{size: 1}]}}`, `omits all key fields ["name"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s *ObjectSchema
			if tc.info == nil {
				s = gadgetSchema(t)
			} else {
				var err error
				if s, err = SchemaOf(*tc.info); err != nil || s == nil {
					t.Fatalf("schema of %s: %v", tc.info.Kind, err)
				}
			}
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(tc.object), &obj); err != nil {
				t.Fatal(err)
			}
			err := s.validate(obj)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("validate: %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("validate: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestSchemaOfUnknownKinds(t *testing.T) {
	tests := []struct {
		name string
		info Info
	}{
		{"a guessed resource", Info{GVR: schema.GroupVersionResource{Group: "x.io", Version: "v1", Resource: "things"}, Kind: "Thing", Guessed: true}},
		{"a kind client-go does not know, without a CRD", Info{GVR: schema.GroupVersionResource{Group: "x.io", Version: "v1", Resource: "things"}, Kind: "Thing"}},
		{"a built-in version client-go does not know", Info{GVR: schema.GroupVersionResource{Group: "apps", Version: "v9", Resource: "deployments"}, Kind: "Deployment"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := SchemaOf(tc.info); s != nil || err != nil {
				t.Errorf("SchemaOf: %v, %v; want nil, nil", s, err)
			}
		})
	}
}

func BenchmarkValidate(b *testing.B) {
	s, _ := SchemaOf(Info{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment"})
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: m, namespace: ns, labels: {a: b}},
spec: {replicas: 3, selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {securityContext: {runAsNonRoot: true},
containers: [{name: m, image: memcached, command: [memcached, "-m=64"], ports: [{name: m, containerPort: 11211}],
securityContext: {runAsUser: 1001, capabilities: {drop: [ALL]}}}]}}}}`), &obj); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.validate(obj); err != nil {
			b.Fatal(err)
		}
	}
}
