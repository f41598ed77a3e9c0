package policy

import (
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
)

// declaredPolicy is a policy whose parent is declared by parentSchema only (no CRD is known), with
// children (from line 18); extra goes after them.
func declaredPolicy(scope, child, extra string) string {
	return `apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: web
spec:
  parentResource: {apiVersion: example.com/v1, resource: websites}
  parentSchema:
    kind: Website
    scope: ` + scope + `
    spec: {image: string, names: {type: array, items: string, maxItems: 10}}
    status: {replicas: integer, phase: string}
  childResources:
    - {apiVersion: v1, resource: configmaps}
    - {apiVersion: v1, resource: namespaces}
    - {apiVersion: rbac.authorization.k8s.io/v1, resource: clusterrolebindings}
  children:
` + child + extra
}

const (
	// children[0], line 17; its metadata at line 21
	cmIn = `    - id: cm
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: x, namespace: kube-system}
`
	cmNoNamespace = `    - id: cm
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: x}
`
	nsChild = `    - id: ns
      template:
        apiVersion: v1
        kind: Namespace
        metadata: {name: x}
`
	crbChild = `    - id: crb
      template:
        apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRoleBinding
        metadata: {name: x}
        roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
`
)

// TestTheDeclaredParentDecidesAsACRDDoes: without --crd, what parentSchema declares (the scope,
// the status schema) is checked as the CRD that `metacel crd` prints from it would be, and the
// mistakes that would fail every sync are load errors at their line.
func TestTheDeclaredParentDecidesAsACRDDoes(t *testing.T) {
	tests := []struct {
		name, policy, want string
	}{
		{"a literal namespace under a namespaced parent", declaredPolicy("Namespaced", cmIn, ""),
			`p.yaml:21: spec.children[0].template.metadata.namespace: "kube-system" is a literal namespace, but the parent (Website) is namespaced`},
		{"a Namespace child without crossNamespace", declaredPolicy("Namespaced", nsChild, ""),
			`p.yaml:17: spec.children[0].crossNamespace: v1 Namespace is cluster-scoped and the parent (Website) is namespaced: set crossNamespace: true`},
		{"a ClusterRoleBinding child without crossNamespace", declaredPolicy("Namespaced", crbChild, ""),
			`p.yaml:17: spec.children[0].crossNamespace: rbac.authorization.k8s.io/v1 ClusterRoleBinding is cluster-scoped and the parent (Website) is namespaced`},
		{"a namespaced child without a namespace under a cluster-scoped parent", declaredPolicy("Cluster", cmNoNamespace, ""),
			`p.yaml:21: spec.children[0].template.metadata: v1 ConfigMap is namespaced and the parent (Website) is cluster-scoped, so it has no namespace to default to: set metadata.namespace`},
		{"a string expression into an integer status field", declaredPolicy("Namespaced", cmNoNamespace, "  status:\n    replicas: \"${parent.metadata.name}\"\n"),
			`p.yaml:23: spec.status.replicas: "${parent.metadata.name}" returns string, but Website status.replicas takes a number: convert it, e.g. "${int(parent.metadata.name)}"`},
		{"a literal string into an integer status field", declaredPolicy("Namespaced", cmNoNamespace, "  status:\n    replicas: \"3\"\n"),
			`p.yaml:23: spec.status.replicas: "3" is a string, but Website status.replicas takes a number: write it unquoted (3)`},
		{"a related object in a literal namespace the confinement does not allow",
			declaredPolicy("Namespaced", cmNoNamespace, "  related:\n    - {id: src, apiVersion: v1, resource: configmaps, namespace: kube-system, name: x}\n"),
			`p.yaml:23: spec.related[0].namespace: "kube-system" is a literal namespace, but the parent (Website) is namespaced and reads only its own namespace unless spec.confinement.relatedNamespaces allows more, ` +
				`so every sync of a parent in another namespace fails with NamespaceNotAllowed: allow the namespace in spec.confinement.relatedNamespaces (e.g. relatedNamespaces: {names: [kube-system]}), or remove namespace (it defaults to the parent's)`},
		{"a related object in a literal namespace the confinement does not name",
			declaredPolicy("Namespaced", cmNoNamespace, "  confinement: {relatedNamespaces: {names: [shared]}}\n  related:\n    - {id: src, apiVersion: v1, resource: configmaps, namespace: kube-system, name: x}\n"),
			`p.yaml:24: spec.related[0].namespace: "kube-system" is a literal namespace, but the parent (Website) is namespaced and reads only its own namespace unless spec.confinement.relatedNamespaces allows more, ` +
				`so every sync of a parent in another namespace fails with NamespaceNotAllowed: add "kube-system" to spec.confinement.relatedNamespaces.names`},
		{"variables in a validation", declaredPolicy("Namespaced", cmNoNamespace, "  variables: [{name: x, expression: \"'a'\"}]\n  validations:\n    - expression: \"variables.x == 'a'\"\n"),
			`p.yaml:24: spec.validations[0].expression: compile "variables.x == 'a'": undeclared reference to 'variables' (in container '') (column 1 of the expression): ` +
				`variables are not available in validations, which run before them: read parent and related only, and repeat the variable's expression here if you need it`},
		{"children in a validation", declaredPolicy("Namespaced", cmNoNamespace, "  validations:\n    - expression: \"has(children.cm)\"\n"),
			`p.yaml:23: spec.validations[0].expression: compile "has(children.cm)": undeclared reference to 'children'`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("p.yaml", []byte(tc.policy), kinds.NewCatalog())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

// TestWhatTheDeclaredParentAllowsLoads: the same policies, written as the declaration allows, load.
func TestWhatTheDeclaredParentAllowsLoads(t *testing.T) {
	cross := func(child string) string {
		return strings.Replace(child, "      template:", "      crossNamespace: true\n      template:", 1)
	}
	tests := []struct{ name, policy string }{
		{"a literal namespace the confinement names", declaredPolicy("Namespaced", cross(cmIn), "  confinement: {childNamespaces: {names: [kube-system]}}\n")},
		{"a Namespace child with crossNamespace", declaredPolicy("Namespaced", cross(nsChild), "")},
		{"a namespaced child with a namespace under a cluster-scoped parent", declaredPolicy("Cluster", cmIn, "")},
		{"a cluster-scoped child under a cluster-scoped parent", declaredPolicy("Cluster", nsChild, "")},
		{"status fields of their types", declaredPolicy("Namespaced", cmNoNamespace, "  status:\n    replicas: \"${size(parent.spec.?names.orValue([]))}\"\n    phase: \"${parent.metadata.name}\"\n")},
		{"a related object in a namespace left to consent",
			declaredPolicy("Namespaced", cmNoNamespace, "  confinement: {relatedNamespaces: {consentLabel: example.com/share}}\n  related:\n    - {id: src, apiVersion: v1, resource: configmaps, namespace: kube-system, name: x}\n")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Load("p.yaml", []byte(tc.policy), kinds.NewCatalog()); err != nil {
				t.Fatalf("must load, got:\n%v", err)
			}
		})
	}
}

// TestAValidationOfAnUntypedParentMustBeABool: without any schema of the parent, its metadata is
// still known, and a validation that returns no bool is a load error.
func TestAValidationOfAnUntypedParentMustBeABool(t *testing.T) {
	p := placementPolicy("demo.rtfm.co.ua/v1", "myapps", "") + "  validations:\n    - expression: \"parent.metadata.name\"\n    - expression: \"parent.spec.ok\"\n"
	_, err := Load("p.yaml", []byte(p), kinds.NewCatalog())
	errs := Errors(err)
	if len(errs) != 1 || errs[0].Error() != `p.yaml:20: spec.validations[0].expression: "parent.metadata.name" must return a bool, but returns string` {
		t.Fatalf("got:\n%v\nwant one error at spec.validations[0]", err)
	}
}
