package expr

import "testing"

func TestReadsKnowsWhetherAnExpressionMayReadTheParentsStatus(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{"parent.spec.image", false},
		{"parent.metadata.name + '-pod'", false},
		{"has(parent.spec.banner) ? parent.spec.banner : ''", false},
		{"parent.status.podName", true},
		{"has(parent.status)", true},
		{"parent['status'] != null", true},
		{"size(parent) > 0", true},
		{"[parent].size() == 1", true},
		{"'status' in parent", true},
	} {
		if got := recorded(t, tc.src).ParentStatus(); got != tc.want {
			t.Errorf("%s: ParentStatus() = %v, want %v", tc.src, got, tc.want)
		}
	}
	r := &Reads{}
	env, _ := NewEnv(Scope{Reads: r})
	if _, err := env.Unrecorded().Compile("parent.status.ready == true", WantBool); err != nil {
		t.Fatal(err)
	}
	if r.ParentStatus() {
		t.Error("an expression compiled in the environment without its Reads was recorded")
	}
}

func TestReadsKnowsWhetherAnExpressionMayReadTheChildren(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want bool
	}{
		{"parent.metadata.name + '-pod'", false},
		{"'children'", false},
		{"has(children.pod)", true},
		{"children.pod.status.phase == 'Running'", true},
		{"children == children", true},
		{"[1, 2].exists(x, has(children.pod))", true},
	} {
		if got := recorded(t, tc.src).Children(); got != tc.want {
			t.Errorf("%s: Children() = %v, want %v", tc.src, got, tc.want)
		}
	}
}

// recorded is what Reads records of one expression, compiled where a child "pod" is declared.
func recorded(t *testing.T, src string) *Reads {
	t.Helper()
	r := &Reads{}
	env, err := NewEnv(Scope{Reads: r, Children: map[string]ObjectID{"pod": {}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Compile(src, WantAny); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return r
}
