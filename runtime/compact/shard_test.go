package compact

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"metacel.dev/metacel/runtime/hashslot"
)

var firstHalf = hashslot.Range{From: 0, To: hashslot.Count / 2}

// shardedUIDs returns n UIDs shaped like the API server's (random UUIDs, from a fixed seed), and
// those of them in r. (Not "uid-1", "uid-2": FNV-1a's top bits, the slot, hardly depend on the
// last bytes hashed.)
func shardedUIDs(n int, r hashslot.Range) (all, in []string) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for range n {
		uid := fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", rnd.Uint32(), rnd.Uint32()>>16, rnd.Uint32()>>20, rnd.Uint32()>>16, rnd.Uint64()>>16)
		all = append(all, uid)
		if r.Contains(types.UID(uid)) {
			in = append(in, uid)
		}
	}
	return all, in
}

// shardServer serves the ConfigMaps with the given UIDs, unfiltered, as a list and as a watch
// (ADDED events, then a bookmark), recording the shard selectors it was asked for.
type shardServer struct {
	uids      []string
	selectors chan string
}

func (s *shardServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.selectors <- q.Get("shardSelector")
	objects := make([]string, len(s.uids))
	for i, uid := range s.uids {
		objects[i] = fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","namespace":"ns","uid":%q,"resourceVersion":"%d"}}`, i, uid, i+1)
	}
	w.Header().Set("Content-Type", "application/json")
	if q.Get("watch") != "true" {
		_, _ = fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[%s]}`, strings.Join(objects, ","))
		return
	}
	for _, o := range objects {
		_, _ = fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", o)
	}
	_, _ = fmt.Fprint(w, `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"100"}}}`+"\n")
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

func TestAShardedListWatch(t *testing.T) {
	all, in := shardedUIDs(40, firstHalf)
	if len(in) == 0 || len(in) == len(all) {
		t.Fatalf("%d of %d UIDs in %v: want some in and some out", len(in), len(all), firstHalf)
	}
	cases := []struct {
		name         string
		serverSide   bool
		wantSelector string
		wantUIDs     []string // what the server sends back unfiltered reaches the informer as
	}{
		{"server side asks the API server to select the range", true, firstHalf.Selector(), all},
		{"client side drops the objects outside the range", false, "", in},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			server := &shardServer{uids: all, selectors: make(chan string, 2)}
			ts := httptest.NewServer(server)
			defer ts.Close()
			client, err := NewClient(&rest.Config{Host: ts.URL}, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			lw := client.ShardedListWatch(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "", firstHalf, c.serverSide)

			list, err := lw.ListWithContext(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := <-server.selectors; got != c.wantSelector {
				t.Errorf("list asked with shard selector %q, want %q", got, c.wantSelector)
			}
			if got := listedUIDs(list); !slices.Equal(got, c.wantUIDs) {
				t.Errorf("listed %v, want %v", got, c.wantUIDs)
			}

			w, err := lw.WatchWithContext(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if got := <-server.selectors; got != c.wantSelector {
				t.Errorf("watch asked with shard selector %q, want %q", got, c.wantSelector)
			}
			if got := watchedUIDsUntilBookmark(t, w); !slices.Equal(got, c.wantUIDs) {
				t.Errorf("watched %v, want %v", got, c.wantUIDs)
			}
		})
	}
}

func listedUIDs(list runtime.Object) []string {
	var out []string
	for _, o := range list.(*List).Items {
		out = append(out, string(o.GetUID()))
	}
	return out
}

// watchedUIDsUntilBookmark returns the UIDs of the objects a watch delivers before its bookmark,
// which must come.
func watchedUIDsUntilBookmark(t *testing.T, w watch.Interface) []string {
	t.Helper()
	var out []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended before its bookmark")
			}
			if e.Type == watch.Bookmark {
				return out
			}
			out = append(out, string(e.Object.(*Object).GetUID()))
		case <-timeout:
			t.Fatalf("no bookmark after 10s (got %v)", out)
		}
	}
}

func TestAFilteredWatchPassesBookmarksAndErrors(t *testing.T) {
	_, in := shardedUIDs(40, firstHalf)
	all, _ := shardedUIDs(40, hashslot.Range{From: 0, To: hashslot.Count})
	out := slices.DeleteFunc(slices.Clone(all), func(uid string) bool { return slices.Contains(in, uid) })
	obj := func(uid string) *Object {
		return NewObject(metav1.TypeMeta{}, metav1.ObjectMeta{UID: types.UID(uid)}, nil)
	}
	cases := []struct {
		name  string
		event watch.Event
		pass  bool
	}{
		{"an object added in the range", watch.Event{Type: watch.Added, Object: obj(in[0])}, true},
		{"an object modified in the range", watch.Event{Type: watch.Modified, Object: obj(in[0])}, true},
		{"an object deleted in the range", watch.Event{Type: watch.Deleted, Object: obj(in[0])}, true},
		{"an object added outside the range", watch.Event{Type: watch.Added, Object: obj(out[0])}, false},
		{"an object modified outside the range", watch.Event{Type: watch.Modified, Object: obj(out[0])}, false},
		{"an object deleted outside the range", watch.Event{Type: watch.Deleted, Object: obj(out[0])}, false},
		{"a bookmark (no UID)", watch.Event{Type: watch.Bookmark, Object: obj("")}, true},
		{"an error", watch.Event{Type: watch.Error, Object: &metav1.Status{Code: 410}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fw := &filteredWatch{keep: firstHalf.Contains}
			if got := fw.passes(c.event); got != c.pass {
				t.Errorf("passes = %v, want %v", got, c.pass)
			}
		})
	}
}

func TestAFilteredWatchEndsOnStopWithAnEventUnread(t *testing.T) {
	in := watch.NewFake()
	w := filterWatch(in, func(types.UID) bool { return true })
	in.Add(&Object{}) // returns once the filter holds the event, which nobody reads
	w.Stop()
	if !in.IsStopped() {
		t.Error("Stop did not stop the underlying watch")
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("the filtered watch did not end after Stop")
		}
	}
}

func TestProbeShardSupport(t *testing.T) {
	cases := []struct {
		name      string
		shardInfo *metav1.ShardInfo
		err       error
		want      bool
	}{
		{"a server that echoes shardInfo honours shard selectors", &metav1.ShardInfo{Selector: "s"}, nil, true},
		{"a server that ignores the selector does not", nil, nil, false},
		{"a refused list is an error", nil, errors.New("forbidden"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kube := fake.NewClientset()
			var asked metav1.ListOptions
			kube.PrependReactor("list", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
				asked = a.(k8stesting.ListActionImpl).ListOptions
				return true, &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ShardInfo: c.shardInfo}}, c.err
			})
			got, err := ProbeShardSupport(context.Background(), kube, "ns")
			if (err != nil) != (c.err != nil) || got != c.want {
				t.Errorf("ProbeShardSupport = %v, %v; want %v, error %v", got, err, c.want, c.err)
			}
			if asked.ShardSelector == "" || asked.Limit != 1 {
				t.Errorf("listed with %+v, want a shard selector and limit 1", asked)
			}
		})
	}
}
