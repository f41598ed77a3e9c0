package policystatus

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"metacel.dev/metacel/runtime/contract"
)

const (
	hashA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	hashB = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

func TestAConfigMapsLabelsSumUpItsPolicies(t *testing.T) {
	long := strings.Repeat("é", 1500)
	for _, tc := range []struct {
		name       string
		statuses   map[string]Status
		wantLabels map[string]string
		wantError  string
	}{
		{
			name:     "one running policy shows its version and counts, no rollout",
			statuses: map[string]Status{"web": {State: Running, Version: hashA, Parents: 3, Ready: 2, Failing: 1}},
			wantLabels: map[string]string{contract.LabelPolicyState: "Running", contract.LabelPolicyVersion: "0123456789ab",
				contract.LabelPolicyParents: "3", contract.LabelPolicyReady: "2", contract.LabelPolicyFailing: "1"},
		},
		{
			name: "several policies: the most severe state, sums, a hash of their versions",
			statuses: map[string]Status{
				"a": {State: Running, Version: hashA, Parents: 1, Ready: 1},
				"b": {State: Invalid, Version: hashB, Parents: 2, Ready: 1, Failing: 1, LastError: "b.yaml:3: bad"},
				"c": {State: RollingOut, Version: hashA, Parents: 4, Ready: 4, Step: 1, Steps: 2},
			},
			wantLabels: map[string]string{contract.LabelPolicyState: "Invalid", contract.LabelPolicyVersion: version([]string{"a", "b", "c"}, map[string]Status{
				"a": {Version: hashA}, "b": {Version: hashB}, "c": {Version: hashA},
			}), contract.LabelPolicyParents: "7", contract.LabelPolicyReady: "6", contract.LabelPolicyFailing: "1", contract.LabelPolicyRollout: "1-of-2"},
			wantError: "b: b.yaml:3: bad",
		},
		{
			name:       "a rollout shows its step",
			statuses:   map[string]Status{"web": {State: RollingOut, Version: "abc", Step: 2, Steps: 3}},
			wantLabels: map[string]string{contract.LabelPolicyState: "RollingOut", contract.LabelPolicyVersion: "abc", contract.LabelPolicyParents: "0", contract.LabelPolicyReady: "0", contract.LabelPolicyFailing: "0", contract.LabelPolicyRollout: "2-of-3"},
		},
		{
			name:       "a single policy's error is shown as it is",
			statuses:   map[string]Status{"web": {State: Waiting, LastError: "waits for gadgets.example.com/v1"}},
			wantLabels: map[string]string{contract.LabelPolicyState: "Waiting", contract.LabelPolicyVersion: "", contract.LabelPolicyParents: "0", contract.LabelPolicyReady: "0", contract.LabelPolicyFailing: "0"},
			wantError:  "waits for gadgets.example.com/v1",
		},
		{
			name:       "a long error is trimmed to 1000 characters",
			statuses:   map[string]Status{"web": {State: Invalid, LastError: long}},
			wantLabels: map[string]string{contract.LabelPolicyState: "Invalid", contract.LabelPolicyVersion: "", contract.LabelPolicyParents: "0", contract.LabelPolicyReady: "0", contract.LabelPolicyFailing: "0"},
			wantError:  strings.Repeat("é", 999) + "…",
		},
		{
			name:       "no policy: nothing",
			statuses:   map[string]Status{},
			wantLabels: map[string]string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := desiredMetadata(tc.statuses)
			if !maps.Equal(m.labels, tc.wantLabels) {
				t.Errorf("labels %v, want %v", m.labels, tc.wantLabels)
			}
			if got := m.annotations[contract.AnnotationPolicyLastError]; got != tc.wantError {
				t.Errorf("last error %q, want %q", got, tc.wantError)
			}
			if _, ok := m.annotations[contract.AnnotationPolicyLastError]; ok && tc.wantError == "" {
				t.Error("the last-error annotation must be absent when there is none")
			}
			checkStatusAnnotation(t, m, tc.statuses)
		})
	}
}

// checkStatusAnnotation checks that the status annotation holds each policy's Status.
func checkStatusAnnotation(t *testing.T, m metadata, statuses map[string]Status) {
	t.Helper()
	text, ok := m.annotations[contract.AnnotationPolicyStatus]
	if len(statuses) == 0 {
		if ok {
			t.Error("no policy, yet a status annotation")
		}
		return
	}
	var got map[string]Status
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("status annotation %q: %v", text, err)
	}
	for name, want := range statuses {
		want.LastError = trimError(want.LastError)
		if got[name] != want {
			t.Errorf("status annotation for %s: %+v, want %+v", name, got[name], want)
		}
	}
}

func TestTheMostSevereStateIsShown(t *testing.T) {
	order := []State{Running, RollingOut, Waiting, NotSynced, RolledBack, Invalid}
	for i, lower := range order {
		for _, higher := range order[i+1:] {
			t.Run(string(higher)+" over "+string(lower), func(t *testing.T) {
				got := mostSevere(map[string]Status{"a": {State: lower}, "b": {State: higher}})
				if got != higher {
					t.Errorf("got %s", got)
				}
			})
		}
	}
}

func TestLabelValuesAreSanitised(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		state         State
	}{
		{"spaces and punctuation", "v1 (beta)!", "Some State"},
		{"longer than 63 characters", strings.Repeat("ab", 40), State(strings.Repeat("x", 70))},
		{"non-ASCII", "版本", "état"},
		{"starts and ends with a separator", "-v1.", "_s_"},
		{"invalid UTF-8", "\xff\xfeok", "ok\xff"},
		{"nothing valid", "!!!", "---"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := desiredMetadata(map[string]Status{"p": {State: tc.state, Version: tc.version}})
			for k, v := range m.labels {
				if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
					t.Errorf("label %s=%q is invalid: %v", k, v, errs)
				}
			}
		})
	}
	if got := labelValue("v1 (beta)!"); got != "v1--beta" {
		t.Errorf("labelValue keeps what it can: got %q", got)
	}
}
