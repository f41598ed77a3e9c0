package policy

import (
	"reflect"
	"strings"
	"testing"

	"metacel.dev/metacel/runtime/kinds"
)

// configMaps is a policy head whose children are ConfigMaps (the entries follow).
var configMaps = strings.Replace(header, "resource: pods", "resource: configmaps", 1) + "  children:\n"

// entry is a ConfigMap child entry with an id and the given lines (data, dependsOn).
func entry(id, lines string) string {
	return "    - id: " + id + "\n" + lines + "      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"${parent.metadata.name}-" + id + "\"}}\n"
}

func TestChildrenAreOrderedByWhatTheyRead(t *testing.T) {
	tests := []struct {
		name      string
		variables string
		entries   string
		wantOrder []string
		wantAfter map[string][]Dependency
	}{
		{"children that read none are in the order listed", "",
			entry("a", "") + entry("b", ""),
			[]string{"a", "b"}, nil},
		{"a child that reads another's name comes after it exists", "",
			entry("app", "      includeWhen: \"children.?db.?metadata.?name.orValue('') != ''\"\n") + entry("db", ""),
			[]string{"db", "app"}, map[string][]Dependency{"app": {{ID: "db", Why: "it reads children.db"}}}},
		{"a child that reads another whole comes after it is ready", "",
			entry("app", "      includeWhen: \"[children.?db].size() > 0\"\n") + entry("db", ""),
			[]string{"db", "app"}, map[string][]Dependency{"app": {{ID: "db", Ready: true, Why: "it reads children.db's status"}}}},
		{"through a variable", "  variables:\n    - name: dbName\n      expression: \"children.?db.?metadata.?name.orValue('')\"\n",
			entry("app", "      includeWhen: \"variables.dbName != ''\"\n") + entry("db", ""),
			[]string{"db", "app"}, map[string][]Dependency{"app": {{ID: "db", Why: "it reads children.db"}}}},
		{"dependsOn waits for readiness", "",
			entry("app", "      dependsOn: [secret]\n") + entry("secret", ""),
			[]string{"secret", "app"}, map[string][]Dependency{"app": {{ID: "secret", Ready: true, Named: true, Why: "its dependsOn names secret"}}}},
		{"a child reading itself waits for nothing", "",
			entry("a", "      includeWhen: \"!has(children.a) || true\"\n"),
			[]string{"a"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			policy := strings.Replace(configMaps, "  children:\n", tc.variables+"  children:\n", 1) + tc.entries
			cs, err := Load("p.yaml", []byte(policy), kinds.NewCatalog())
			if err != nil {
				t.Fatal(err)
			}
			c := cs[0]
			var order []string
			for _, i := range c.Order {
				order = append(order, c.Children[i].ID)
			}
			if !reflect.DeepEqual(order, tc.wantOrder) {
				t.Errorf("order %v, want %v", order, tc.wantOrder)
			}
			for _, ch := range c.Children {
				if want := tc.wantAfter[ch.ID]; len(want) > 0 || len(ch.After) > 0 {
					if !reflect.DeepEqual(ch.After, want) {
						t.Errorf("%s waits for %+v, want %+v", ch.ID, ch.After, want)
					}
				}
			}
		})
	}
}

func TestAnOrderThatCannotBeIsALoadError(t *testing.T) {
	tests := []struct {
		name    string
		entries string
		want    string
	}{
		{"two children that read each other",
			entry("a", "      includeWhen: \"has(children.b)\"\n") + entry("b", "      includeWhen: \"has(children.a)\"\n"),
			`p.yaml:13: spec.children[0]: the children "a" → "b" → "a" wait for each other in a cycle ("a": it reads children.b; "b": it reads children.a), so no order can apply them`},
		{"a cycle through dependsOn",
			entry("a", "      dependsOn: [c]\n") + entry("b", "      dependsOn: [a]\n") + entry("c", "      dependsOn: [b]\n"),
			`p.yaml:13: spec.children[0]: the children "a" → "c" → "b" → "a" wait for each other in a cycle ("a": its dependsOn names c; "c": its dependsOn names b; "b": its dependsOn names a)`},
		{"dependsOn an id no child has",
			entry("a", "      dependsOn: [db]\n"),
			`p.yaml:14: spec.children[0].dependsOn[0]: no child has id "db": name one of "a"`},
		{"dependsOn itself",
			entry("a", "      dependsOn: [a]\n"),
			`p.yaml:14: spec.children[0].dependsOn[0]: a child cannot depend on itself: remove "a"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("p.yaml", []byte(configMaps+tc.entries), kinds.NewCatalog())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
