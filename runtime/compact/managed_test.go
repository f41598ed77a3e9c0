package compact

import (
	"encoding/json"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestTheChildrenOfOneTemplateShareMetacelsManagedFields(t *testing.T) {
	pods := make([]*Object, 3)
	for i := range pods {
		_, message := encodings(t, benchPod(i))
		obj, err := decodeProtobufObject(message)
		if err != nil {
			t.Fatal(err)
		}
		pods[i] = obj.(*Object)
	}
	for i, p := range pods[1:] {
		if p.managed[0].fields != pods[0].managed[0].fields {
			t.Errorf("pod %d: metacel's fields are a copy of their own, not the template pod 0 holds", i+1)
		}
	}
	for i, p := range pods {
		want := benchPod(i).ManagedFields[0].FieldsV1.GetRawBytes()
		got := managedFields(p.managed, p.GetOwnerReferences())[0].FieldsV1.GetRawBytes()
		if string(got) != string(want) {
			t.Errorf("pod %d: fieldsV1 decodes to\n%s\nwant\n%s", i, got, want)
		}
	}
}

func TestManagedFieldsComeBackAsSentButOtherManagersFields(t *testing.T) {
	now, epoch := metav1.Unix(1764400000, 0), metav1.Unix(0, 0)
	owner := metav1.OwnerReference{APIVersion: "demo/v1", Kind: "MyApp", Name: "a", UID: "u-1", Controller: ptr.To(true)}
	for _, tc := range []struct {
		name   string
		owners []metav1.OwnerReference
		fields string
	}{
		{"the owner's name is a letter of every key", []metav1.OwnerReference{owner}, `{"f:data":{"f:a":{},"f:aa-u-1":{},"f:ba":{}}}`},
		{"no owner", nil, `{"f:data":{"f:a":{}}}`},
		{"the controller is the second owner", []metav1.OwnerReference{{Name: "other", UID: "u-0"}, owner}, `{"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"u-1\"}":{},"k:{\"uid\":\"u-0\"}":{}}}}`},
		{"an owner without a name or UID", []metav1.OwnerReference{{Kind: "X"}}, `{"f:data":{"f:x":{}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := []metav1.ManagedFieldsEntry{
				{Manager: "metacel", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(tc.fields)},
				{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:x":{}}`), Subresource: "status"},
				{Manager: "at-the-epoch", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &epoch},
			}
			got := managedFields(compactManaged(sent, tc.owners), tc.owners)
			want := []metav1.ManagedFieldsEntry{sent[0], sent[1], sent[2]}
			want[1].FieldsV1 = nil
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Errorf("got\n%s\nwant\n%s", g, w)
			}
		})
	}
}

// A managed-fields entry takes 24 bytes in a cache: every cached object holds one or more.
func TestAManagedEntryTakes24Bytes(t *testing.T) {
	if size := unsafe.Sizeof(managedEntry{}); size > 24 {
		t.Errorf("a managedEntry takes %d bytes, want at most 24", size)
	}
}
