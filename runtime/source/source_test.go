package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestFilesSkipsHiddenEntriesOfMountedConfigMaps(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, data string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("..2026_11_22/a.yaml", "a")
	if err := os.Symlink("..2026_11_22", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "a.yaml"), filepath.Join(dir, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	write("sub/b.yml", "b")
	write("notes.txt", "not a policy")
	units, err := readUnits([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range units {
		got = append(got, strings.TrimPrefix(u.Name, dir+"/")+"="+string(u.Data))
	}
	if strings.Join(got, ",") != "a.yaml=a,sub/b.yml=b" {
		t.Errorf("units: %v", got)
	}
	if _, err := readUnits([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("a missing path must be an error, not an empty snapshot that would stop every policy")
	}
}

func TestConfigMapUnitsAreStable(t *testing.T) {
	cm := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: data}
	}
	units := configMapUnits([]*corev1.ConfigMap{cm("b", map[string]string{"y": "2", "x": "1"}), cm("a", map[string]string{"z": "3"})})
	var names []string
	for _, u := range units {
		names = append(names, u.Name)
		if u.ConfigMap == nil || u.ConfigMap.Kind != "ConfigMap" {
			t.Errorf("%s: no ConfigMap reference for its events", u.Name)
		}
	}
	if strings.Join(names, ",") != "configmap/ns/a/z,configmap/ns/b/x,configmap/ns/b/y" {
		t.Errorf("order: %v", names)
	}
}

func TestAPolicyConfigMapWithoutDataIsAUnitWithItsProblem(t *testing.T) {
	tests := []struct {
		name string
		cm   *corev1.ConfigMap
		want string
	}{
		{"no data at all", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: "ns"}},
			"ConfigMap ns/empty is labelled metacel.dev/policy=true but has no data key: put each policy under data"},
		{"only binaryData", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bin", Namespace: "ns"}, BinaryData: map[string][]byte{"p.yaml": []byte("x")}},
			`ConfigMap ns/bin is labelled metacel.dev/policy=true but holds its content under binaryData ("p.yaml"), which is never read`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			units := configMapUnits([]*corev1.ConfigMap{tc.cm})
			if len(units) != 1 {
				t.Fatalf("units: %+v, want one", units)
			}
			if u := units[0]; !strings.HasPrefix(u.Problem, tc.want) || u.ConfigMap == nil || u.Name != "configmap/ns/"+tc.cm.Name {
				t.Errorf("unit %+v, want the problem %q and the ConfigMap for its event", u, tc.want)
			}
		})
	}
}

func TestOnlyConfigMapsLabelledAsPoliciesAndNotChildrenHoldPolicies(t *testing.T) {
	selector, err := labels.Parse(policySelector)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"labelled as a policy", map[string]string{"metacel.dev/policy": "true"}, true},
		{"labelled as a policy, managed by someone else", map[string]string{"metacel.dev/policy": "true", "app.kubernetes.io/managed-by": "helm"}, true},
		{"a child of a policy named true", map[string]string{"metacel.dev/policy": "true", "app.kubernetes.io/managed-by": "metacel"}, false},
		{"a child of another policy", map[string]string{"metacel.dev/policy": "web", "app.kubernetes.io/managed-by": "metacel"}, false},
		{"not labelled", map[string]string{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := selector.Matches(labels.Set(tc.labels)); got != tc.want {
				t.Errorf("selected %v, want %v", got, tc.want)
			}
		})
	}
}
