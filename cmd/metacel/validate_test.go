package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// widgetPolicy is a policy whose parent is myapps (crds/myapp.yaml) with a Deployment child.
const widgetPolicy = `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: widget
spec:
  parentResource:
    apiVersion: demo.rtfm.co.ua/v1
    resource: myapps
  childResources:
    - {apiVersion: apps/v1, resource: deployments}
  children:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${parent.metadata.name}"}
        spec:
          replicas: %s
`

func TestValidateSaysWhatItChecked(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.yaml", strings.Replace(widgetPolicy, "%s", "2", 1))
	bad := write("bad.yaml", strings.Replace(widgetPolicy, "%s", "three", 1))
	crd := func(name string) string { return filepath.Join(repo, "crds", name+".yaml") }
	tests := []struct {
		name   string
		args   []string
		wantOK bool
		want   string // in the output or the errors
	}{
		{"a CRD of the parent types it", []string{good, "--crd", crd("myapp")}, true,
			`policy "widget" is valid (parent demo.rtfm.co.ua/v1 myapps, typed against CRD myapps.demo.rtfm.co.ua; 1 child entry)`},
		{"without a CRD the parent is untyped, and says so", []string{good}, true,
			`(parent demo.rtfm.co.ua/v1 myapps, untyped: pass --crd to check parent fields; 1 child entry)`},
		{"a CRD that does not define the parent is an error", []string{good, "--crd", crd("memcached")}, false,
			good + `:6: spec.parentResource: myapps.demo.rtfm.co.ua is defined by none of the --crd files (they define memcacheds.cache.example.com)`},
		{"a directory of CRDs defines every seed parent", []string{filepath.Join(repo, "policies"), "--crd", filepath.Join(repo, "crds")}, true,
			"children of loadbalancers.elbv2.services.k8s.aws unchecked: pass their CRD with --crd"},
		{"a child template that does not fit its kind is an error at its line", []string{bad, "--crd", crd("myapp")}, false,
			bad + `:18: spec.children[0].template.spec.replicas: "three" is a string, but Deployment spec.replicas takes a number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := runCLI(t, append([]string{"validate"}, tc.args...)...)
			if (err == nil) != tc.wantOK || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("validate %v: error %v, output:\n%s%s\nwant ok=%v and %q", tc.args, err, out, errOut, tc.wantOK, tc.want)
			}
		})
	}
}
