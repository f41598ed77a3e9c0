package policy

import (
	"fmt"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
)

// placementPolicy is a policy whose parent is apiVersion/resource, with a valid first child and
// then child (children[1], starting at line 19).
func placementPolicy(apiVersion, resource, child string) string {
	return fmt.Sprintf(`apiVersion: metacel.dev/v1alpha1
kind: CompositePolicy
metadata:
  name: test
spec:
  parentResource:
    apiVersion: %s
    resource: %s
  childResources:
    - {apiVersion: v1, resource: configmaps}
    - {apiVersion: rbac.authorization.k8s.io/v1, resource: clusterroles}
  children:
    - id: first
      template:
        apiVersion: v1
        kind: ConfigMap
        # a namespace of its own, so that it fits a cluster-scoped parent too
        metadata: {name: first, namespace: "${parent.metadata.name}"}
`, apiVersion, resource) + child
}

// Children at children[1], line 19; their metadata.namespace, when they have one, is at line 25.
const (
	configMapIn = `    - id: cm
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: x
          namespace: %s
`
	clusterRoleIn = `    - id: role
      template:
        apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRole
        metadata:
          name: x
          namespace: %s
`
	clusterRole = `    - id: role
      template:
        apiVersion: rbac.authorization.k8s.io/v1
        kind: ClusterRole
        metadata:
          name: x
`
)

// withConfinement adds spec.confinement (one line, after parentResource's three) to a
// placementPolicy: lines from 9 on move one down.
func withConfinement(policy, rule string) string {
	return strings.Replace(policy, "  childResources:\n", "  confinement: {"+rule+"}\n  childResources:\n", 1)
}

func TestPlacementErrorsAtLoad(t *testing.T) {
	myapps := func(child string) string { return placementPolicy("demo.rtfm.co.ua/v1", "myapps", child) }
	namespaces := func(child string) string { return placementPolicy("v1", "namespaces", child) }
	tests := []struct {
		name   string
		policy string
		want   []string // every error, file:line: path: message (a prefix of the message is enough)
	}{
		{"a literal namespace under a namespaced parent, with the line and the fix",
			myapps(fmt.Sprintf(configMapIn, "kube-system")),
			[]string{`p.yaml:25: spec.children[1].template.metadata.namespace: "kube-system" is a literal namespace, but the parent (MyApp) is namespaced and its children live in the parent's namespace: ` +
				`remove metadata.namespace (it defaults to the parent's), or set crossNamespace: true on this child and allow the namespace in spec.confinement.childNamespaces (e.g. childNamespaces: {names: [kube-system]}) to write across namespaces (it is then cleaned up by the parent's finalizer)`}},
		{"a literal namespace with crossNamespace: true that the confinement does not allow",
			myapps(strings.Replace(fmt.Sprintf(configMapIn, "kube-system"), "      template:", "      crossNamespace: true\n      template:", 1)),
			[]string{`p.yaml:26: spec.children[1].template.metadata.namespace: "kube-system" is a literal namespace, but the parent (MyApp) is namespaced and writes only into its own namespace unless spec.confinement.childNamespaces allows more, ` +
				`so every sync of a parent in another namespace fails with NamespaceNotAllowed: allow the namespace in spec.confinement.childNamespaces (e.g. childNamespaces: {names: [kube-system]})`}},
		{"a literal namespace with crossNamespace: true that the confinement names not",
			withConfinement(myapps(strings.Replace(fmt.Sprintf(configMapIn, "kube-system"), "      template:", "      crossNamespace: true\n      template:", 1)), "childNamespaces: {names: [shared]}"),
			[]string{`p.yaml:27: spec.children[1].template.metadata.namespace: "kube-system" is a literal namespace, but the parent (MyApp) is namespaced and writes only into its own namespace unless spec.confinement.childNamespaces allows more, ` +
				`so every sync of a parent in another namespace fails with NamespaceNotAllowed: add "kube-system" to spec.confinement.childNamespaces.names`}},
		{"a namespaced child without a namespace under a cluster-scoped parent",
			namespaces(strings.Replace(fmt.Sprintf(configMapIn, `""`), "          namespace: \"\"\n", "", 1)),
			[]string{`p.yaml:24: spec.children[1].template.metadata: v1 ConfigMap is namespaced and the parent (Namespace) is cluster-scoped, so it has no namespace to default to: set metadata.namespace`}},
		{"a namespaced child with an empty namespace under a cluster-scoped parent",
			namespaces(fmt.Sprintf(configMapIn, `""`)),
			[]string{`p.yaml:24: spec.children[1].template.metadata: v1 ConfigMap is namespaced and the parent (Namespace) is cluster-scoped`}},
		{"a literal namespace in a forEach child",
			myapps(strings.Replace(fmt.Sprintf(configMapIn, "kube-system"), "      template:", "      forEach: \"['a', 'b']\"\n      template:", 1)),
			[]string{`p.yaml:26: spec.children[1].template.metadata.namespace: "kube-system" is a literal namespace, but the parent (MyApp) is namespaced`}},
		{"crossNamespace: false written out is no allowance",
			myapps(strings.Replace(fmt.Sprintf(configMapIn, "other"), "      template:", "      crossNamespace: false\n      template:", 1)),
			[]string{`p.yaml:26: spec.children[1].template.metadata.namespace: "other" is a literal namespace`}},
		{"a literal namespace under a namespaced parent, whatever the kind",
			myapps(strings.Replace(fmt.Sprintf(clusterRoleIn, "kube-system"), "kind: ClusterRole", `kind: "${'ClusterRole'}"`, 1)),
			[]string{`p.yaml:25: spec.children[1].template.metadata.namespace: "kube-system" is a literal namespace, but the parent (MyApp) is namespaced`}},
		{"a cluster-scoped child with a namespace",
			namespaces(fmt.Sprintf(clusterRoleIn, "kube-system")),
			[]string{`p.yaml:25: spec.children[1].template.metadata.namespace: "kube-system": rbac.authorization.k8s.io/v1 ClusterRole is cluster-scoped and cannot have a namespace: remove metadata.namespace`}},
		{"a cluster-scoped child with a namespace, crossNamespace or not",
			myapps(strings.Replace(fmt.Sprintf(clusterRoleIn, "kube-system"), "      template:", "      crossNamespace: true\n      template:", 1)),
			[]string{`p.yaml:26: spec.children[1].template.metadata.namespace: "kube-system": rbac.authorization.k8s.io/v1 ClusterRole is cluster-scoped and cannot have a namespace`}},
		{"a cluster-scoped child under a namespaced parent needs crossNamespace",
			myapps(clusterRole),
			[]string{`p.yaml:19: spec.children[1].crossNamespace: rbac.authorization.k8s.io/v1 ClusterRole is cluster-scoped and the parent (MyApp) is namespaced: ` +
				`set crossNamespace: true on this child to allow it (it is then cleaned up by the parent's finalizer)`}},
		{"crossNamespace: false on a cluster-scoped child points at the field",
			myapps(strings.Replace(clusterRole, "      template:", "      crossNamespace: false\n      template:", 1)),
			[]string{`p.yaml:20: spec.children[1].crossNamespace: rbac.authorization.k8s.io/v1 ClusterRole is cluster-scoped and the parent (MyApp) is namespaced`}},
		{"both fixes of a cluster-scoped child are reported together",
			myapps(fmt.Sprintf(clusterRoleIn, "kube-system")),
			[]string{ // in file order
				`p.yaml:19: spec.children[1].crossNamespace: rbac.authorization.k8s.io/v1 ClusterRole is cluster-scoped and the parent (MyApp) is namespaced`,
				`p.yaml:25: spec.children[1].template.metadata.namespace: "kube-system": rbac.authorization.k8s.io/v1 ClusterRole is cluster-scoped and cannot have a namespace`,
			}},
	}
	m := mapper(t, "myapp")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("p.yaml", []byte(tc.policy), m)
			errs := Errors(err)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d errors, want %d:\n%v", len(errs), len(tc.want), err)
			}
			for i, want := range tc.want {
				if !strings.HasPrefix(errs[i].Error(), want) {
					t.Errorf("error %d:\n%v\nwant it to start with:\n%s", i, errs[i], want)
				}
			}
		})
	}
}

// TestPlacementLeftToRunTime: what the run time may accept for some parent, or what cannot be
// known at load, loads.
func TestPlacementLeftToRunTime(t *testing.T) {
	myapps := func(child string) string { return placementPolicy("demo.rtfm.co.ua/v1", "myapps", child) }
	crossNamespace := func(child string) string {
		return strings.Replace(child, "      template:", "      crossNamespace: true\n      template:", 1)
	}
	tests := []struct {
		name   string
		policy string
		mapper kinds.Mapper // nil: the myapp CRD, so that the parent is known to be namespaced
	}{
		{"a literal namespace with crossNamespace: true that the confinement names", withConfinement(myapps(crossNamespace(fmt.Sprintf(configMapIn, "kube-system"))), "childNamespaces: {names: [kube-system]}"), nil},
		{"a literal namespace with crossNamespace: true left to consent", withConfinement(myapps(crossNamespace(fmt.Sprintf(configMapIn, "kube-system"))), "childNamespaces: {consentLabel: example.com/ok}"), nil},
		{"a literal namespace with crossNamespace: true left to an expression", withConfinement(myapps(crossNamespace(fmt.Sprintf(configMapIn, "kube-system"))), "childNamespaces: {expression: \"['a']\"}"), nil},
		{"a templated namespace", myapps(fmt.Sprintf(configMapIn, `"${parent.metadata.name}-config"`)), nil},
		{"a namespace that is only a template", myapps(fmt.Sprintf(configMapIn, `"${parent.metadata.namespace}"`)), nil},
		{"an empty namespace, which defaults to the parent's", myapps(fmt.Sprintf(configMapIn, `""`)), nil},
		{"a literal namespace under a cluster-scoped parent", placementPolicy("v1", "namespaces", fmt.Sprintf(configMapIn, "kube-system")), nil},
		{"a literal namespace under a parent whose scope is a guess", myapps(fmt.Sprintf(configMapIn, "kube-system")), kinds.NewCatalog()},
		{"a cluster-scoped child with crossNamespace: true", myapps(crossNamespace(clusterRole)), nil},
		{"a cluster-scoped child under a cluster-scoped parent", placementPolicy("v1", "namespaces", clusterRole), nil},
		{"a templated kind with a namespace and crossNamespace: true", myapps(crossNamespace(strings.Replace(fmt.Sprintf(clusterRoleIn, "kube-system"), "kind: ClusterRole", `kind: "${'ClusterRole'}"`, 1))), nil},
		{"an expression child, whose object is known at run time only", myapps(`    - id: cm
      expression: "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'x', 'namespace': 'kube-system'}}"
`), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.mapper
			if m == nil {
				m = mapper(t, "myapp")
			}
			if _, err := Load("p.yaml", []byte(tc.policy), m); err != nil {
				t.Fatalf("must load, got:\n%v", err)
			}
		})
	}
}
