package kinds

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// acceptedWhenMissing lists the fields Kubernetes' OpenAPI calls required whose zero value the API
// server accepts, so that an object without them is valid: a Go field without omitempty is
// "required" in the OpenAPI whether or not its validation (k8s.io/kubernetes pkg/apis/.../validation)
// refuses the zero value. required.json leaves them out.
var acceptedWhenMissing = map[string][]string{
	"io.k8s.api.core.v1.HTTPHeader":                  {"value"},    // validateHTTPGetAction checks the name only
	"io.k8s.api.core.v1.Sysctl":                      {"value"},    // validateSysctls checks the name only
	"io.k8s.api.core.v1.ISCSIVolumeSource":           {"lun"},      // 0..255
	"io.k8s.api.core.v1.ISCSIPersistentVolumeSource": {"lun"},      // 0..255
	"io.k8s.api.core.v1.SleepAction":                 {"seconds"},  // 0 with AllowPodLifecycleSleepActionZeroValue
	"io.k8s.api.apps.v1.ControllerRevision":          {"revision"}, // >= 0
	"io.k8s.api.storage.v1.CSIDriver":                {"spec"},     // every field optional or defaulted
	"io.k8s.api.storage.v1.CSINode":                  {"spec"},     // a node without drivers
	"io.k8s.api.events.v1.EventSeries":               {"count"},
	"io.k8s.api.resource.v1.ResourcePool":            {"generation"},
	"io.k8s.api.resource.v1beta1.ResourcePool":       {"generation"},
	"io.k8s.api.resource.v1beta2.ResourcePool":       {"generation"},
	"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion": {"served", "storage"}, // false
}

// TestTheRequiredFieldsAreKubernetes checks required.json against the OpenAPI of the Kubernetes
// release of the k8s.io/api in go.mod (k8s.io/kubernetes@v1.X.Y/api/openapi-spec/swagger.json in
// the module cache), and writes it again under METACEL_UPDATE_GOLDEN=1 (`make golden`). Without
// that file in the module cache (go mod download k8s.io/kubernetes@v1.X.Y), it checks only that
// every type of required.json is one of client-go's schema.
func TestTheRequiredFieldsAreKubernetes(t *testing.T) {
	shipped, _ := builtins()
	for name := range builtinRequired() {
		if _, ok := shipped.FindNamedType(name); !ok {
			t.Errorf("required.json names %s, which client-go's schema does not have: write it again with METACEL_UPDATE_GOLDEN=1 go test ./runtime/kinds", name)
		}
	}
	path, version := swaggerPath(t)
	b, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("METACEL_UPDATE_GOLDEN") != "" {
			t.Fatalf("read Kubernetes' OpenAPI: %v: run go mod download k8s.io/kubernetes@%s", err, version)
		}
		t.Skipf("Kubernetes' OpenAPI is not in the module cache (%v): go mod download k8s.io/kubernetes@%s checks required.json against it", err, version)
	}
	want := requiredFromOpenAPI(t, b)
	if os.Getenv("METACEL_UPDATE_GOLDEN") != "" {
		out, err := json.MarshalIndent(want, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("required.json", append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var got map[string][]string
	if err := json.Unmarshal(builtinRequiredJSON, &got); err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Fatalf("required.json is not the required fields of Kubernetes %s's OpenAPI: write it again with METACEL_UPDATE_GOLDEN=1 go test ./runtime/kinds (make golden)", version)
	}
}

// requiredFromOpenAPI reads the required fields of the types of client-go's schema from Kubernetes'
// OpenAPI (swagger 2), less acceptedWhenMissing.
func requiredFromOpenAPI(t *testing.T, swagger []byte) map[string][]string {
	t.Helper()
	var doc struct {
		Definitions map[string]struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(swagger, &doc); err != nil {
		t.Fatal(err)
	}
	shipped, _ := builtins()
	out := map[string][]string{}
	for name, def := range doc.Definitions {
		if _, ok := shipped.FindNamedType(name); !ok {
			continue
		}
		var fields []string
		for _, f := range def.Required {
			var p struct {
				Default any `json:"default"`
			}
			_ = json.Unmarshal(def.Properties[f], &p)
			if p.Default != nil || slices.Contains(acceptedWhenMissing[name], f) {
				continue
			}
			fields = append(fields, f)
		}
		if len(fields) > 0 {
			slices.Sort(fields)
			out[name] = fields
		}
	}
	return out
}

// swaggerPath returns where the module cache holds the OpenAPI of the Kubernetes release of the
// k8s.io/api go.mod requires (v0.X.Y is Kubernetes v1.X.Y).
func swaggerPath(t *testing.T) (path, version string) {
	t.Helper()
	v, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/api").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/api: %v", err)
	}
	version = "v1" + strings.TrimPrefix(strings.TrimSpace(string(v)), "v0")
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(cache)), "k8s.io", fmt.Sprintf("kubernetes@%s", version), "api", "openapi-spec", "swagger.json"), version
}
