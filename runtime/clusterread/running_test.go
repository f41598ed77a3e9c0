package clusterread

import (
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"metacel.dev/metacel/runtime/kinds"
	"metacel.dev/metacel/test/testpolicies"
)

func policyConfigMap(namespace, name string, labelled bool, data map[string]string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: data}
	if labelled {
		cm.Labels = map[string]string{"metacel.dev/policy": "true"}
	}
	return cm
}

func TestFindRunning(t *testing.T) {
	gadget := testpolicies.YAML("gadget", nil)
	other := strings.Replace(gadget, "name: gadget", "name: other", 1)
	broken := strings.Replace(gadget, "${parent.spec.image}", "${parent.spec.imgae}", 1)
	tests := []struct {
		name       string
		configMaps []runtime.Object
		want       string // the source found; "" for none
		wantErr    string
	}{
		{"no ConfigMap: a new policy", nil, "", ""},
		{"the labelled ConfigMap holding the policy, among others", []runtime.Object{
			policyConfigMap("metacel-system", "a-other", true, map[string]string{"other.yaml": other}),
			policyConfigMap("metacel-system", "b-gadget", true, map[string]string{"notes.yaml": "not: [a policy", "gadget.yaml": gadget}),
		}, "configmap/metacel-system/b-gadget/gadget.yaml", ""},
		{"an unlabelled ConfigMap is not read", []runtime.Object{
			policyConfigMap("metacel-system", "gadget", false, map[string]string{"gadget.yaml": gadget}),
		}, "", ""},
		{"another namespace is not read", []runtime.Object{
			policyConfigMap("elsewhere", "gadget", true, map[string]string{"gadget.yaml": gadget}),
		}, "", ""},
		{"the first of two, in the runtime's order", []runtime.Object{
			policyConfigMap("metacel-system", "z", true, map[string]string{"gadget.yaml": gadget}),
			policyConfigMap("metacel-system", "a", true, map[string]string{"b.yaml": gadget, "a.yaml": gadget}),
		}, "configmap/metacel-system/a/a.yaml", ""},
		{"a running version that does not compile is an error", []runtime.Object{
			policyConfigMap("metacel-system", "gadget", true, map[string]string{"gadget.yaml": broken}),
		}, "", `the running version of policy "gadget" (configmap/metacel-system/gadget/gadget.yaml) does not load now`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindRunning(t.Context(), kubefake.NewClientset(tt.configMaps...), "metacel-system", "gadget", catalog(t))
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case tt.want == "" && got != nil:
				t.Errorf("found %s, want none", got.Source)
			case tt.want != "" && (got == nil || got.Source != tt.want || got.Policy.Name() != "gadget"):
				t.Errorf("found %+v, want %s", got, tt.want)
			}
		})
	}
}

func catalog(t *testing.T) *kinds.Catalog {
	t.Helper()
	cat, err := kinds.LoadCRDFiles([]string{filepath.Join("..", "..", "crds", "myapp.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	return cat
}
