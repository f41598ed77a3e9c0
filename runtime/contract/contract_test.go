package contract

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// TestTheKeysAndReasonsAreWhatTheClusterHolds pins every value: objects in clusters carry them,
// and earlier and later runtimes read them, so a changed value is a migration, never an edit.
func TestTheKeysAndReasonsAreWhatTheClusterHolds(t *testing.T) {
	for name, tc := range map[string]struct{ got, want string }{
		"LabelManagedBy":                      {LabelManagedBy, "app.kubernetes.io/managed-by"},
		"ManagedByValue":                      {ManagedByValue, "metacel"},
		"LabelChildPolicyName":                {LabelChildPolicyName, "metacel.dev/policy-name"},
		"LabelChildPolicyLegacy":              {LabelChildPolicyLegacy, "metacel.dev/policy"},
		"LabelParentUID":                      {LabelParentUID, "metacel.dev/parent-uid"},
		"LabelChildID":                        {LabelChildID, "metacel.dev/child-id"},
		"LabelShardSlot":                      {LabelShardSlot, "metacel.dev/shard-slot"},
		"AnnotationDeletionPolicy":            {AnnotationDeletionPolicy, "metacel.dev/deletion-policy"},
		"AnnotationContentHash":               {AnnotationContentHash, "metacel.dev/content-hash"},
		"AnnotationDesiredHash":               {AnnotationDesiredHash, "metacel.dev/desired-hash"},
		"AnnotationChildren":                  {AnnotationChildren, "metacel.dev/children"},
		"Finalizer":                           {Finalizer, "metacel.dev/cleanup"},
		"ConditionSynced":                     {ConditionSynced, "Synced"},
		"ConditionReady":                      {ConditionReady, "Ready"},
		"ReasonSynced":                        {ReasonSynced, "Synced"},
		"ReasonReady":                         {ReasonReady, "ChildrenReady"},
		"ReasonNotReady":                      {ReasonNotReady, "ChildrenNotReady"},
		"ReasonReadyWhenFailed":               {ReasonReadyWhenFailed, "ReadyWhenFailed"},
		"ReasonValidationFailed":              {ReasonValidationFailed, "ValidationFailed"},
		"ReasonEvaluationError":               {ReasonEvaluationError, "EvaluationError"},
		"ReasonInvalidChild":                  {ReasonInvalidChild, "InvalidChild"},
		"ReasonNamespaceNotAllowed":           {ReasonNamespaceNotAllowed, "NamespaceNotAllowed"},
		"ReasonApplyFailed":                   {ReasonApplyFailed, "ApplyFailed"},
		"ReasonChildConflict":                 {ReasonChildConflict, "ChildConflict"},
		"ReasonDriftConflict":                 {ReasonDriftConflict, "DriftConflict"},
		"ReasonChildKeepsDisappearing":        {ReasonChildKeepsDisappearing, "ChildKeepsDisappearing"},
		"ReasonForbidden":                     {ReasonForbidden, "Forbidden"},
		"ReasonAccessUnchecked":               {ReasonAccessUnchecked, "AccessUnchecked"},
		"ReasonStatusFailed":                  {ReasonStatusFailed, "StatusFailed"},
		"ReasonChildOutOfReach":               {ReasonChildOutOfReach, "ChildOutOfReach"},
		"ReasonChildNotRecorded":              {ReasonChildNotRecorded, "ChildNotRecorded"},
		"LabelPolicyConfigMap":                {LabelPolicyConfigMap, "metacel.dev/policy"},
		"AnnotationLoadedVersions":            {AnnotationLoadedVersions, "metacel.dev/loaded-versions"},
		"LabelPolicyState":                    {LabelPolicyState, "metacel.dev/state"},
		"LabelPolicyVersion":                  {LabelPolicyVersion, "metacel.dev/version"},
		"LabelPolicyParents":                  {LabelPolicyParents, "metacel.dev/parents"},
		"LabelPolicyReady":                    {LabelPolicyReady, "metacel.dev/ready"},
		"LabelPolicyFailing":                  {LabelPolicyFailing, "metacel.dev/failing"},
		"LabelPolicyRollout":                  {LabelPolicyRollout, "metacel.dev/rollout"},
		"AnnotationPolicyLastError":           {AnnotationPolicyLastError, "metacel.dev/last-error"},
		"AnnotationPolicyStatus":              {AnnotationPolicyStatus, "metacel.dev/status"},
		"AnnotationAllowBreakingSchemaChange": {AnnotationAllowBreakingSchemaChange, "metacel.dev/allow-breaking-schema-change"},
		"LabelInstalledBy":                    {LabelInstalledBy, "metacel.dev/installed-by"},
		"AnnotationParentSchemaHash":          {AnnotationParentSchemaHash, "metacel.dev/parent-schema-hash"},
		"AnnotationParentDeclaration":         {AnnotationParentDeclaration, "metacel.dev/parent-declaration"},
		"AnnotationStorageMigration":          {AnnotationStorageMigration, "metacel.dev/storage-migration"},
		"AnnotationKeptPrefix":                {AnnotationKeptPrefix, "metacel.dev/kept-"},
		"LabelMemoOf":                         {LabelMemoOf, "metacel.dev/memo-of"},
		"LabelRolloutOf":                      {LabelRolloutOf, "metacel.dev/rollout-of"},
		"AnnotationChildResources":            {AnnotationChildResources, "metacel.dev/child-resources"},
		"LabelShardMember":                    {LabelShardMember, "metacel.dev/shard-member"},
		"AnnotationShardSlots":                {AnnotationShardSlots, "metacel.dev/shard-slots"},
		"AnnotationShardReport":               {AnnotationShardReport, "metacel.dev/shard-report"},
		"LabelShardTable":                     {LabelShardTable, "metacel.dev/shard-table"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", name, tc.got, tc.want)
		}
	}
}

func TestBookkeepingIsMetacelsOwnKeys(t *testing.T) {
	for _, k := range append(slices.Clone(ChildLabels), RetiredChildLabels...) {
		if !IsBookkeepingLabel(k) {
			t.Errorf("child label %q is not bookkeeping", k)
		}
	}
	for _, k := range append(slices.Clone(ChildAnnotations), RetiredChildAnnotations...) {
		if !IsBookkeepingAnnotation(k) {
			t.Errorf("child annotation %q is not bookkeeping", k)
		}
	}
	for _, k := range []string{"app", "example.com/metacel.dev", "metacel.dev", "e2e.metacel.dev/test"} {
		if IsBookkeepingLabel(k) || IsBookkeepingAnnotation(k) {
			t.Errorf("%q is bookkeeping", k)
		}
	}
	if IsBookkeepingAnnotation(LabelManagedBy) {
		t.Errorf("the annotation %q is bookkeeping: only the label is", LabelManagedBy)
	}
	for _, retired := range append(slices.Clone(RetiredChildLabels), RetiredChildAnnotations...) {
		if slices.Contains(ChildLabels, retired) || slices.Contains(ChildAnnotations, retired) {
			t.Errorf("%q is both written and retired", retired)
		}
	}
}

// TestTheContractIsALeaf checks that the package imports nothing of metacel's own: every package
// may import it.
func TestTheContractIsALeaf(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(path, "metacel.dev/") {
				t.Errorf("%s imports %s", file, path)
			}
		}
	}
}

// TestAChildsPolicyIsReadFromEitherKey checks that a child an earlier runtime wrote (the legacy
// key alone), one this runtime wrote (both) and one a later runtime wrote (the new key alone) all
// name their policy, and that the new key wins when they disagree.
func TestAChildsPolicyIsReadFromEitherKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		labels  labels.Set
		wantKey string
		want    string
	}{
		{"an earlier runtime's child", map[string]string{LabelChildPolicyLegacy: "web"}, LabelChildPolicyLegacy, "web"},
		{"this runtime's child", map[string]string{LabelChildPolicyName: "web", LabelChildPolicyLegacy: "web"}, LabelChildPolicyName, "web"},
		{"a later runtime's child", map[string]string{LabelChildPolicyName: "web"}, LabelChildPolicyName, "web"},
		{"keys that disagree", map[string]string{LabelChildPolicyName: "web", LabelChildPolicyLegacy: "api"}, LabelChildPolicyName, "web"},
		{"an empty new key", map[string]string{LabelChildPolicyName: "", LabelChildPolicyLegacy: "web"}, LabelChildPolicyLegacy, "web"},
		{"no policy", map[string]string{LabelChildID: "x"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if key, got := ChildPolicyLabel(tc.labels); key != tc.wantKey || got != tc.want {
				t.Errorf("ChildPolicyLabel = %q, %q, want %q, %q", key, got, tc.wantKey, tc.want)
			}
			if got := ChildPolicy(tc.labels); got != tc.want {
				t.Errorf("ChildPolicy = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestChildSelectorsListAChildWhicheverKeyNamesItsPolicy checks that the selectors of a policy's
// children select a child by either key, and those of a parent's by its UID alone.
func TestChildSelectorsListAChildWhicheverKeyNamesItsPolicy(t *testing.T) {
	for _, tc := range []struct {
		name              string
		policy, parentUID string
		want              []string
	}{
		{"a policy's children", "web", "", []string{"metacel.dev/policy-name=web", "metacel.dev/policy=web"}},
		{"a parent's children", "web", "p-1", []string{"metacel.dev/parent-uid=p-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ChildSelectors(tc.policy, tc.parentUID); !slices.Equal(got, tc.want) {
				t.Errorf("ChildSelectors = %q, want %q", got, tc.want)
			}
		})
	}
}
