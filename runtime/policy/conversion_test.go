package policy

import (
	"os"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
)

// TestAConversionIsTypedAndLosesNothing checks what the loader refuses in the conversions of a
// parent's versions, from the example of package conversion.
func TestAConversionIsTypedAndLosesNothing(t *testing.T) {
	data, err := os.ReadFile("../conversion/testdata/cache.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example := string(data)
	tests := []struct {
		name, old, new, want string
	}{
		{"a field the other version holds and no expression reads",
			"          keep: [spec.template.pullPolicy]\n", "",
			`spec.parentSchema.versions[0].fromHub: loses spec.template.pullPolicy of version "v1": no expression reads parent.spec.template.pullPolicy`},
		{"a kept field the version does not have",
			"keep: [spec.template.pullPolicy]", "keep: [spec.template.pullPolicy, spec.nothing]",
			`spec.parentSchema.versions[0].fromHub.keep[1]: "spec.nothing" is not a field of version "v1"`},
		{"a kept field that holds a field the conversion carries",
			"keep: [spec.template.pullPolicy]", "keep: [spec.template]",
			`spec.parentSchema.versions[0].fromHub.keep[0]: "spec.template" holds spec.template.image, which the conversion carries (an expression reads parent.spec.template.image)`},
		{"a spec not written whose fields differ",
			"        toHub:\n          spec:\n            replicas: ${int(parent.spec.size)}\n            template:\n              image: ${parent.spec.image}\n", "",
			`spec.parentSchema.versions[0].toHub: the two versions declare different fields in spec, so it cannot be copied`},
		{"a value of the wrong type for the field it fills",
			"replicas: ${int(parent.spec.size)}", "replicas: ${parent.spec.size}",
			`spec.parentSchema.versions[0].toHub.spec.replicas`},
		{"a field the other version does not declare",
			"              image: ${parent.spec.image}\n", "              image: ${parent.spec.image}\n              tag: latest\n",
			`spec.parentSchema.versions[0].toHub.spec.template.tag`},
		{"an expression that reads a field the version does not have",
			"${string(parent.spec.replicas)}\n            image", "${string(parent.spec.replica)}\n            image",
			`spec.parentSchema.versions[0].fromHub.spec.size`},
		{"a storage version that is not declared",
			"    install: true\n", "    install: true\n    storageVersion: v2\n",
			`spec.parentSchema.storageVersion: "v2" is not a version of the parent: one of v1, v1alpha1`},
		{"a version declared twice",
			"      - name: v1alpha1\n", "      - name: v1\n",
			`spec.parentSchema.versions[0].name: the version "v1" is declared twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(example, tc.old) {
				t.Fatalf("the example has no %q", tc.old)
			}
			_, err := Load("cache.yaml", []byte(strings.Replace(example, tc.old, tc.new, 1)), kinds.NewCatalog())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load() error = %v\nwant it to say %q", err, tc.want)
			}
		})
	}
	if _, err := Load("cache.yaml", data, kinds.NewCatalog()); err != nil {
		t.Errorf("the example does not load: %v", err)
	}
}

// A status conversion that reads the parent's status without a guard loaded, and failed for every
// parent without one: every new parent, whose status is written after it is created ("no such
// key: status" on each create or read at the other version).
func TestAStatusConversionMustNotFailOnANewParent(t *testing.T) {
	data, err := os.ReadFile("../conversion/testdata/cache.yaml")
	if err != nil {
		t.Fatal(err)
	}
	withStatus := func(read string) string {
		s := strings.Replace(string(data), "    versions:\n", "    status:\n      phase: string\n    versions:\n", 1)
		s = strings.Replace(s, "          image: {type: string, required: true}\n        toHub:\n",
			"          image: {type: string, required: true}\n        status:\n          state: string\n        toHub:\n          status:\n            phase: "+read+"\n", 1)
		return strings.Replace(s, "          keep: [spec.template.pullPolicy]\n",
			"          status:\n            state: ${parent.?status.?phase}\n          keep: [spec.template.pullPolicy]\n", 1)
	}
	tests := []struct {
		name, read, want string
	}{
		{"read plainly", "${parent.status.state}", `spec.parentSchema.versions[0].toHub.status: "parent.status.state" reads parent.status, which a new parent does not have`},
		{"read optionally", "${parent.?status.?state}", ""},
		{"guarded by has()", `"${has(parent.status) && has(parent.status.state) ? parent.status.state : ''}"`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("cache.yaml", []byte(withStatus(tc.read)), kinds.NewCatalog())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Load() error = %v, want none", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Load() error = %v\nwant it to say %q", err, tc.want)
			}
		})
	}
}
