package operator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/metadata"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/conversionwebhook"
	"metacel.dev/metacel/runtime/crdinstall"
	"metacel.dev/metacel/runtime/policy"
)

// storingCRDs has client keep the CRDs applied to it, as the API server does.
func storingCRDs(client *dynamicfake.FakeDynamicClient) {
	tracker := client.Tracker()
	client.PrependReactor("patch", crdGVR.Resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(a.(k8stesting.PatchAction).GetPatch(), &obj.Object); err != nil {
			return true, nil, err
		}
		_ = tracker.Delete(crdGVR, "", obj.GetName())
		return true, obj, tracker.Add(obj)
	})
}

// crdMetadata is a metadata client of a cluster holding crd, which the runtime's watch of the CRDs
// reads (watchDeclarations).
func crdMetadata(crd *unstructured.Unstructured) metadata.Interface {
	scheme := runtime.NewScheme()
	gv := apiextensionsv1.SchemeGroupVersion
	scheme.AddKnownTypeWithName(gv.WithKind("CustomResourceDefinition"), &metav1.PartialObjectMetadata{})
	scheme.AddKnownTypeWithName(gv.WithKind("CustomResourceDefinitionList"), &metav1.PartialObjectMetadataList{})
	return metadatafake.NewSimpleMetadataClient(scheme, &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: gv.String(), Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: crd.GetName(), Labels: crd.GetLabels(), Annotations: crd.GetAnnotations()},
	})
}

// convertReview posts the API server's ConversionReview of obj to toAPIVersion to the webhook's
// handler, and returns the object it converts to, or the failure it answers.
func convertReview(webhook *conversionServer, obj *unstructured.Unstructured, toAPIVersion string) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: "request-1", DesiredAPIVersion: toAPIVersion,
			Objects: []runtime.RawExtension{{Raw: raw}}},
	})
	if err != nil {
		return nil, err
	}
	w := httptest.NewRecorder()
	conversionwebhook.NewHandler(webhook.lookup, nil).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
	var review apiextensionsv1.ConversionReview
	if err := json.Unmarshal(w.Body.Bytes(), &review); err != nil || review.Response == nil {
		return nil, fmt.Errorf("not a ConversionReview (%d): %s", w.Code, w.Body.Bytes())
	}
	if r := review.Response.Result; r.Status != metav1.StatusSuccess {
		return nil, errors.New(r.Message)
	}
	out := &unstructured.Unstructured{}
	return out, json.Unmarshal(review.Response.ConvertedObjects[0].Raw, &out.Object)
}

// Policy cache installed its CRD (v1, and v1alpha1 converting through the runtime's webhook); a new
// version of it renamed the hub's template.image, a change the installer refuses, so the CRD kept
// the first declaration. The runtime that refused it went on converting with that declaration,
// loaded before; but a runtime started after (a restart, a new replica) found only the refused
// version in the sources, had no converter of the declaration the CRD holds, and answered every
// conversion of the parents with an error: no parent could be read at v1alpha1 any more. The
// declaration a CRD holds converts its parents from the CRD itself, whatever the sources hold;
// a declaration the CRD carries that is not the one it holds converts nothing.
func TestARestartAfterARefusedChangeConvertsWithTheCRDsDeclaration(t *testing.T) {
	tests := []struct {
		name string
		// sources are the policies the restarted runtime's sources hold
		sources func(t *testing.T) []*policy.Document
		// carried, when set, replaces the declaration the CRD carries
		carried func(t *testing.T) *policy.Document
		// converts is whether the restarted runtime converts the stored parent
		converts bool
	}{
		{name: "the refused version in the sources", converts: true,
			sources: func(t *testing.T) []*policy.Document { return []*policy.Document{renamedImage(t)} }},
		{name: "the policy removed from the sources", converts: true,
			sources: func(*testing.T) []*policy.Document { return nil }},
		{name: "a declaration carried that the CRD does not hold",
			sources: func(t *testing.T) []*policy.Document { return []*policy.Document{renamedImage(t)} },
			carried: renamedImage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			running, refused := versionedCache(t), renamedImage(t)
			stored := storedCache(map[string]any{"replicas": int64(2), "template": map[string]any{"image": "redis:7"}})
			client, _ := cacheCluster(stored)
			storingCRDs(client)
			before := testWebhook(t)
			installer := installerOn(client, before)
			if wrote, err := installer.installParentCRD(t.Context(), running, parentCRDOf(t, running), []string{"cache"}); !wrote || err != nil {
				t.Fatalf("installParentCRD(running) = %v, %v: want the CRD created", wrote, err)
			}
			if _, err := installer.installParentCRD(t.Context(), refused, parentCRDOf(t, refused), []string{"cache"}); err == nil {
				t.Fatal("installParentCRD(refused) = nil: want the breaking change refused")
			}
			crd, err := client.Resource(crdGVR).Get(t.Context(), parentCRDOf(t, running).Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.carried != nil {
				declaration, err := policy.ParentDeclaration(tt.carried(t))
				if err != nil {
					t.Fatal(err)
				}
				annotations := crd.GetAnnotations()
				annotations[contract.AnnotationParentDeclaration] = string(declaration)
				crd.SetAnnotations(annotations)
			}

			// the restart: a new process, with the same webhook and certificate, whose sources hold
			// tt.sources, and which reads the CRDs from the cluster
			after := newConversionServer(&before.config, before.certs, nil)
			for _, doc := range tt.sources(t) {
				after.offerPolicy(t.Context(), parentCRD{doc: doc, crd: parentCRDOf(t, doc)})
			}
			go after.watchDeclarations(t.Context(), crdMetadata(crd))
			if !tt.converts {
				eventually(t, 5*time.Second, "the restarted webhook to read the CRD's declaration", func() error {
					after.mu.RLock()
					defer after.mu.RUnlock()
					if _, read := after.carried[crd.GetName()]; !read {
						return errors.New("not read yet")
					}
					return nil
				})
				if converted, err := convertReview(after, stored.DeepCopy(), "versions.example.com/v1alpha1"); err == nil {
					t.Errorf("the stored Cache converts to %v, with a declaration the CRD does not hold", converted.Object["spec"])
				}
				return
			}
			var converted *unstructured.Unstructured
			eventually(t, 5*time.Second, "the restarted webhook to convert a stored v1 Cache to v1alpha1", func() (err error) {
				converted, err = convertReview(after, stored.DeepCopy(), "versions.example.com/v1alpha1")
				return err
			})
			if size, _, _ := unstructured.NestedString(converted.Object, "spec", "size"); size != "2" {
				t.Errorf("the stored Cache converts to spec.size %q, want \"2\" (from spec.replicas, as the CRD's declaration says)", size)
			}
		})
	}
}

// A CRD of several versions a runtime before the declaration was carried installed holds its
// declaration's hash alone: the leader writes it again carrying the declaration, once, without
// listing its parents (the declaration is the same: nothing a parent holds changes), and then
// leaves it as it is.
func TestACRDInstalledBeforeTheDeclarationWasCarriedGetsItWithNoList(t *testing.T) {
	webhook := testWebhook(t)
	doc := versionedCache(t)
	crd := parentCRDOf(t, doc)
	if _, err := webhook.prepare(t.Context(), doc, crd); err != nil {
		t.Fatal(err)
	}
	earlier, err := crdinstall.Desired(crd, "cache", nil)
	if err != nil {
		t.Fatal(err)
	}
	client, _ := cacheCluster(earlier)
	storingCRDs(client)
	var patches, lists int
	client.PrependReactor("list", "caches", func(k8stesting.Action) (bool, runtime.Object, error) {
		lists++
		return false, nil, nil
	})
	client.PrependReactor("patch", crdGVR.Resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		patches++
		return false, nil, nil
	})
	installer := installerOn(client, webhook)
	for range 2 {
		if _, err := installer.installParentCRD(t.Context(), doc, parentCRDOf(t, doc), []string{"cache"}); err != nil {
			t.Fatal(err)
		}
	}
	if patches != 1 || lists > 0 {
		t.Errorf("the CRD was written %d times, its parents listed %d times: want one write, no list", patches, lists)
	}
	written, err := client.Resource(crdGVR).Get(t.Context(), crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := policy.ParentDeclaration(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got := written.GetAnnotations()[contract.AnnotationParentDeclaration]; got != string(want) {
		t.Errorf("the CRD carries the declaration %q, want %s", got, want)
	}
}
