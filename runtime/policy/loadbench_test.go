package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
)

// BenchmarkLoadSeedPolicies loads every policy of policies/ against the seed CRDs: what a start of
// the runtime compiles.
func BenchmarkLoadSeedPolicies(b *testing.B) {
	m, err := kinds.LoadCRDFiles([]string{filepath.Join("..", "..", "crds")})
	if err != nil {
		b.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "policies", "*.yaml"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no policies: %v", err)
	}
	data := make([][]byte, len(files))
	for i, f := range files {
		if data[i], err = os.ReadFile(f); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for i, f := range files {
			if _, err := Load(f, data[i], m); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLoadManyChildren loads one policy of 30 children of built-in kinds, each read by the
// status and by its own readyWhen: the case typed children could make slow.
func BenchmarkLoadManyChildren(b *testing.B) {
	p := []byte(manyChildren(10))
	m, err := kinds.LoadCRDFiles([]string{filepath.Join("..", "..", "crds", "myapp.yaml")})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Load("p.yaml", p, m); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load("p.yaml", p, m); err != nil {
			b.Fatal(err)
		}
	}
}

// manyChildren is a policy with n Deployments, n Services and n ConfigMaps.
func manyChildren(n int) string {
	var s strings.Builder
	s.WriteString(`apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata: {name: many}
spec:
  parentResource: {apiVersion: demo.rtfm.co.ua/v1, resource: myapps}
  childResources:
    - {apiVersion: apps/v1, resource: deployments}
    - {apiVersion: v1, resource: services}
    - {apiVersion: v1, resource: configmaps}
  variables:
    - {name: name, expression: "parent.metadata.name"}
    - {name: labels, expression: "{'app': variables.name}"}
  children:
`)
	for i := range n {
		fmt.Fprintf(&s, `    - id: web%[1]d
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${variables.name}-%[1]d"}
        spec:
          selector: {matchLabels: "${variables.labels}"}
          template:
            metadata: {labels: "${variables.labels}"}
            spec:
              containers: [{name: web, image: nginx}]
      readyWhen: "child.?status.?availableReplicas.orValue(0) >= child.?spec.?replicas.orValue(1)"
    - id: svc%[1]d
      template:
        apiVersion: v1
        kind: Service
        metadata: {name: "${variables.name}-%[1]d"}
        spec:
          selector: "${variables.labels}"
          ports: [{port: 80}]
      readyWhen: "child.?spec.?clusterIP.orValue('') != ''"
    - id: cm%[1]d
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${variables.name}-%[1]d"}
        data: {ip: "${children.?svc%[1]d.?spec.?clusterIP.orValue('')}"}
`, i)
	}
	s.WriteString("  status:\n    phase: \"${")
	for i := range n {
		if i > 0 {
			s.WriteString(" + ")
		}
		fmt.Fprintf(&s, "children.?web%d.?status.?readyReplicas.orValue(0)", i)
	}
	s.WriteString(" > 0 ? 'Running' : 'Pending'}\"\n")
	return s.String()
}
