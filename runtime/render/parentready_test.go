package render

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/kinds"
)

// imageParent is a MyApp with an image.
const imageParent = "{apiVersion: demo.rtfm.co.ua/v1, kind: MyApp, metadata: {name: app, namespace: ns, uid: u-1}, spec: {image: nginx}}"

func TestAParentIsReadyWhenItsOwnRuleAndItsChildrenSaySo(t *testing.T) {
	configMap := "    - id: cm\n      includeWhen: \"has(parent.spec.image)\"\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n"
	exists := map[string][]*unstructured.Unstructured{"cm": {obj(t, "{apiVersion: v1, kind: ConfigMap, metadata: {name: x, namespace: ns}}")}}
	noImage := "{apiVersion: demo.rtfm.co.ua/v1, kind: MyApp, metadata: {name: app, namespace: ns, uid: u-1}, spec: {}}"
	withImage := imageParent
	tests := []struct {
		name     string
		body     string
		parent   string
		observed map[string][]*unstructured.Unstructured
		want     Condition
	}{
		{"a parent whose children are all left out is not ready, and says what left them out",
			"  children:\n" + configMap, noImage, nil,
			Condition{"Ready", "False", contract.ReasonNoChildIncluded,
				`no child is included (cm: includeWhen "has(parent.spec.image)" is false): set spec.readyWhen to say when the parent is ready without children`}},
		{"spec.readyWhen true makes a parent with no child ready",
			"  readyWhen: \"!has(parent.spec.image)\"\n  children:\n" + configMap, noImage, nil,
			Condition{"Ready", "True", contract.ReasonReady, "0 children ready"}},
		{"spec.readyWhen false keeps a parent whose children are ready not ready",
			"  readyWhen: \"parent.metadata.name == 'other'\"\n  children:\n" + configMap, withImage, exists,
			Condition{"Ready", "False", contract.ReasonParentNotReady, `spec.readyWhen "parent.metadata.name == 'other'" is not true yet`}},
		{"children not ready come first",
			"  readyWhen: \"true\"\n  children:\n" + configMap, withImage, nil,
			Condition{"Ready", "False", contract.ReasonNotReady, "waiting for ConfigMap ns/x"}},
		{"a spec.readyWhen that fails makes the parent not ready, not the sync failed",
			"  readyWhen: \"parent.spec.count > 1\"\n  children:\n" + configMap, noImage, nil,
			Condition{"Ready", "False", contract.ReasonReadyWhenFailed, `readyWhen failed for spec.readyWhen: evaluate "parent.spec.count > 1": no such key: count`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(t.Context(), load(t, tc.body), Input{Parent: obj(t, tc.parent), Observed: tc.observed, Mapper: kinds.NewCatalog()})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Conditions()[1]; got != tc.want {
				t.Errorf("Ready condition\n  %+v\nwant\n  %+v", got, tc.want)
			}
		})
	}
}

func TestAPolicysOwnConditionsAreWrittenBesideSyncedAndReady(t *testing.T) {
	body := `  conditions:
    - type: ImageChosen
      status: "${has(parent.spec.image) ? 'True' : 'False'}"
      reason: "${has(parent.spec.image) ? 'ImageGiven' : 'NoImage'}"
      message: "${parent.spec.?image.orValue('no image')}"
    - type: Audited
      status: "Unknown"
      reason: NotAuditedYet
  readyWhen: "true"
`
	out, err := Render(t.Context(), load(t, body), Input{Parent: obj(t, imageParent), Mapper: kinds.NewCatalog()})
	if err != nil {
		t.Fatal(err)
	}
	got := out.Conditions()[2:]
	want := []Condition{{"ImageChosen", "True", "ImageGiven", "nginx"}, {"Audited", "Unknown", "NotAuditedYet", ""}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("own conditions %+v, want %+v", got, want)
	}

	bad := `  conditions:
    - type: ImageChosen
      status: "${parent.spec.?image.orValue('no')}"
      reason: Chosen
`
	_, err = Render(t.Context(), load(t, bad), Input{Parent: obj(t, imageParent), Mapper: kinds.NewCatalog()})
	if want := `spec.conditions[0].status: gave "nginx", which is not a condition status: it must give True, False or Unknown`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// Why a child is not ready is said once, here, for the Ready condition and for metacel tree.
func TestAChildSaysWhyItIsNotReady(t *testing.T) {
	pod := func(readyWhen string) string {
		return "    - apiVersion: v1\n      resource: pods\n  children:\n    - id: p\n" + readyWhen +
			"      template: {apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: nginx}]}}\n"
	}
	observed := func(extra string) map[string][]*unstructured.Unstructured {
		return map[string][]*unstructured.Unstructured{"p": {obj(t, "{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: ns"+extra+"}")}}
	}
	tests := []struct {
		name     string
		body     string
		observed map[string][]*unstructured.Unstructured
		want     string
	}{
		{"missing", pod(""), nil, "missing"},
		{"being deleted", pod(""), observed(", deletionTimestamp: '2026-01-01T00:00:00Z'}"), "being deleted"},
		{"its readyWhen false", pod("      readyWhen: \"child.?status.?phase.orValue('') == 'Running'\"\n"), observed("}"),
			`readyWhen "child.?status.?phase.orValue('') == 'Running'" is not true yet`},
		{"its readyWhen failed", pod("      readyWhen: \"child.status.phase == 'Running'\"\n"), observed("}"),
			`spec.children[0].readyWhen: evaluate "child.status.phase == 'Running'": no such key: status`},
		{"its kind's reason", pod(""), observed("}, status: {phase: Pending}"), "PodPending: Pod is in the Pending phase"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(t.Context(), load(t, tc.body), Input{Parent: obj(t, testParent), Observed: tc.observed, Mapper: kinds.NewCatalog()})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Children[0].NotReadyBecause; got != tc.want {
				t.Errorf("NotReadyBecause %q, want %q", got, tc.want)
			}
		})
	}
}
