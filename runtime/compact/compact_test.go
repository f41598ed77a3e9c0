package compact

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

const configMap = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"ns","uid":"u1",
"resourceVersion":"7","labels":{"app":"a"},"ownerReferences":[{"apiVersion":"v1","kind":"Secret","name":"s","uid":"u0"}],
"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{...the whole object...}","keep":"me"},
"managedFields":[{"manager":"metacel","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}},
{"manager":"kubectl","operation":"Update","time":"2026-11-23T12:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:b":{}}}}]},
"data":{"a":"1","b":"2"},"binaryData":null,"replicas":3}`

func TestACachedObjectKeepsItsMetadataAndItsBytes(t *testing.T) {
	obj, err := decodeObject([]byte(configMap))
	if err != nil {
		t.Fatal(err)
	}
	o, ok := obj.(*Object)
	if !ok {
		t.Fatalf("decoded a %T, want *Object", obj)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"kind", o.kind(), "ConfigMap"},
		{"key", o.GetNamespace() + "/" + o.GetName(), "ns/x"},
		{"uid and resourceVersion", string(o.GetUID()) + " " + o.GetResourceVersion(), "u1 7"},
		{"labels", o.GetLabels(), map[string]string{"app": "a"}},
		{"annotations without kubectl's copy", o.GetAnnotations(), map[string]string{"keep": "me"}},
		{"owner", o.GetOwnerReferences()[0].Name, "s"},
		{"managed fields (only the whole object has them)", len(o.GetManagedFields()), 0},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}

	u, err := Unstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	if a := u.GetAnnotations(); len(a) != 1 || a["keep"] != "me" {
		t.Errorf("decoded annotations %v: want last-applied-configuration dropped, the others kept", a)
	}
	mf := u.GetManagedFields()
	if len(mf) != 2 || mf[0].FieldsV1 == nil || mf[1].FieldsV1 != nil || mf[1].Manager != "kubectl" || mf[1].Time == nil {
		t.Errorf("decoded managed fields %+v: want metacel's whole, kubectl's without its fields but with its name and time", mf)
	}
	if u.Object["replicas"] != int64(3) || u.Object["data"].(map[string]any)["b"] != "2" {
		t.Errorf("decoded object %v: want the rest untouched, integers as int64", u.Object)
	}
	if u.GetKind() != "ConfigMap" || u.GetAPIVersion() != "v1" || strings.Contains(string(o.Raw), `"kind"`) || strings.Contains(string(o.Raw), `"apiVersion"`) {
		t.Errorf("decoded %s %s from a body of %s: want the type held once, in the object, and given back", u.GetAPIVersion(), u.GetKind(), o.Raw)
	}
	u.Object["data"].(map[string]any)["b"] = "changed"
	if again, _ := Unstructured(o); again.Object["data"].(map[string]any)["b"] != "2" {
		t.Error("a decoded object shares state with the cache's")
	}
	if cp := o.DeepCopyObject().(*Object); !reflect.DeepEqual(cp, o) {
		t.Errorf("deep copy differs: %+v", cp)
	}
}

func TestAStatusIsDecodedAsAStatus(t *testing.T) {
	obj, err := decodeObject([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}`))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := obj.(*metav1.Status); !ok || s.Code != 410 || s.Reason != metav1.StatusReasonExpired {
		t.Errorf("decoded %#v, want the Status", obj)
	}
}

// apiServer serves one resource's list and watch (a watch list too: initial events, then the
// bookmark that ends them), recording the label selectors it was asked for.
type apiServer struct {
	objects   []string
	selectors chan string
}

func (s *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/configmaps" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"the server could not find the requested resource"}`)
		return
	}
	q := r.URL.Query()
	select {
	case s.selectors <- q.Get("labelSelector"):
	default:
	}
	w.Header().Set("Content-Type", "application/json")
	if q.Get("watch") != "true" {
		_, _ = fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"10"},"items":[%s]}`, strings.Join(s.objects, ","))
		return
	}
	if q.Get("sendInitialEvents") == "true" {
		for _, o := range s.objects {
			_, _ = fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", o)
		}
		_, _ = fmt.Fprint(w, `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"10","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n")
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func TestAnInformerListsAndWatchesObjectsAsCompactObjects(t *testing.T) {
	server := &apiServer{objects: []string{strings.ReplaceAll(configMap, "\n", "")}, selectors: make(chan string, 10)}
	inf := syncedInformer(t, server, schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "app=a")
	if sel := <-server.selectors; sel != "app=a" {
		t.Errorf("asked with label selector %q, want app=a", sel)
	}
	obj, ok, _ := inf.GetStore().GetByKey("ns/x")
	if !ok {
		t.Fatalf("ns/x not in the cache: %v", inf.GetStore().ListKeys())
	}
	u, err := Unstructured(obj)
	if err != nil || u.GetName() != "x" || u.Object["data"].(map[string]any)["a"] != "1" {
		t.Errorf("cached %T decodes to %v, %v", obj, u, err)
	}
}

func TestARequestTheServerRefusesCarriesItsStatus(t *testing.T) {
	ts := httptest.NewServer(&apiServer{selectors: make(chan string, 10)})
	defer ts.Close()
	client, err := NewClient(&rest.Config{Host: ts.URL}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	lw := client.ListWatch(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}, "")
	_, listErr := lw.ListWithContext(t.Context(), metav1.ListOptions{})
	_, watchErr := lw.WatchWithContext(t.Context(), metav1.ListOptions{})
	for name, err := range map[string]error{"list": listErr, "watch": watchErr} {
		if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "could not find the requested resource") {
			t.Errorf("%s: %v, want the API server's NotFound", name, err)
		}
	}
}

func TestAListIsDecodedIntoCompactObjects(t *testing.T) {
	data, _ := json.Marshal(map[string]any{"kind": "ConfigMapList", "apiVersion": "v1",
		"metadata": map[string]any{"resourceVersion": "10", "continue": "c"},
		"items":    []json.RawMessage{json.RawMessage(configMap), json.RawMessage(strings.Replace(configMap, `"name":"x"`, `"name":"y"`, 1))}})
	list, err := decodeList(data)
	if err != nil {
		t.Fatal(err)
	}
	if list.ResourceVersion != "10" || list.Continue != "c" || len(list.Items) != 2 || list.Items[1].GetName() != "y" {
		t.Errorf("list %+v", list)
	}
}

// The API server leaves kind and apiVersion out of the items of a built-in kind's JSON list: each
// item takes the list's, as apimachinery's unstructured list gives them. Cached without them, a
// child had no identity (render.Identity "/ /ns/name"), was taken for another object, and
// applied again at every sync.
func TestAListsItemsWithoutAKindTakeTheLists(t *testing.T) {
	list, err := decodeList([]byte(`{"kind":"DeploymentList","apiVersion":"apps/v1","metadata":{},"items":[
		{"metadata":{"name":"x","namespace":"ns"}},
		{"kind":"Deployment","apiVersion":"apps/v1beta2","metadata":{"name":"y","namespace":"ns"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"apps/v1, Kind=Deployment", "apps/v1beta2, Kind=Deployment"} {
		if got := list.Items[i].GetObjectKind().GroupVersionKind().String(); got != want {
			t.Errorf("item %d: %s, want %s", i, got, want)
		}
	}
	u, err := Unstructured(&list.Items[0])
	if err != nil || u.GetKind() != "Deployment" || u.GetAPIVersion() != "apps/v1" {
		t.Errorf("decoded %v (%v), want a Deployment of apps/v1", u, err)
	}
}

// syncedInformer returns an informer of a resource, listed and watched through a Client from
// server, once its cache has synced; it runs until the test ends.
func syncedInformer(t *testing.T, server http.Handler, gvr schema.GroupVersionResource, selector string) cache.SharedIndexInformer {
	t.Helper()
	ts := httptest.NewServer(server)
	t.Cleanup(ts.Close)
	client, err := NewClient(&rest.Config{Host: ts.URL}, &version.Info{Major: "1", Minor: "36"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	inf := cache.NewSharedIndexInformer(client.ListWatch(gvr, selector), &Object{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(waitCtx(t, 30*time.Second).Done(), inf.HasSynced) {
		t.Fatal("the cache did not sync")
	}
	return inf
}

func waitCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
