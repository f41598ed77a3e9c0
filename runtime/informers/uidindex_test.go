package informers

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/cache"
)

// A lookup by UID reads the UID's bucket, and returns, of its objects, only those of the UID.
func TestAUIDLookupFindsOnlyThatUIDsObjects(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &metav1.PartialObjectMetadata{}, 0, Indexers([]string{ByUID, ByParentUID}))
	rc := Fixed(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, inf)
	for _, o := range []struct{ name, uid, parent string }{
		{"a", "abc-1", ""}, {"b", "abc-2", ""}, {"c", "def-1", "abc-1"}, {"d", "def-2", "abc-1"}, {"e", "def-3", "abc-2"},
	} {
		obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: o.name, UID: types.UID(o.uid)}}
		if o.parent != "" {
			obj.Labels = map[string]string{ByParentUID: o.parent}
		}
		if err := inf.GetIndexer().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name, index, value string
		want               []string
	}{
		{"an object by its UID, beside another of its bucket", ByUID, "abc-1", []string{"a"}},
		{"children by their parent's UID, beside another parent's of the bucket", ByParentUID, "abc-1", []string{"c", "d"}},
		{"a UID whose bucket holds others only", ByUID, "abc-9", nil},
		{"a UID shorter than a bucket", ByUID, "ab", nil},
		{"no UID", ByParentUID, "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := rc.ByIndex(tt.index, tt.value)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range objs {
				got = append(got, m.GetName())
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ByIndex(%s, %q) = %v, want %v", tt.index, tt.value, got, tt.want)
			}
		})
	}
}

// BenchmarkUIDIndex reports the heap a store of 100,000 objects holds for its index of their UIDs
// (the objects aside), bucketed as the pool's informers index them, against client-go's index of
// each UID (the baseline: a set per UID), and the time of one lookup.
func BenchmarkUIDIndex(b *testing.B) {
	const n = 100_000
	objs := make([]*metav1.PartialObjectMetadata, n)
	for i := range objs {
		objs[i] = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("app-%06d", i), UID: uuid.NewUUID()}}
	}
	exact := func(obj any) ([]string, error) { return []string{string(obj.(metav1.Object).GetUID())}, nil }
	for _, tc := range []struct {
		name    string
		indexes cache.Indexers
	}{{"each UID (client-go)", cache.Indexers{ByUID: exact}}, {"bucketed", Indexers([]string{ByUID})}, {"no index", nil}} {
		b.Run(tc.name, func(b *testing.B) {
			var perObject float64
			var store cache.Indexer
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				store = cache.NewIndexer(cache.MetaNamespaceKeyFunc, tc.indexes)
				for _, o := range objs {
					if err := store.Add(o); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perObject = float64(after.HeapAlloc-before.HeapAlloc) / n
			}
			b.ReportMetric(perObject, "B/object")
			runtime.KeepAlive(store)
		})
	}
	lookups := []struct {
		name    string
		indexes cache.Indexers
		lookup  func(rc *Cache, uid string) int
	}{
		{"lookup, each UID (client-go)", cache.Indexers{ByUID: exact}, func(rc *Cache, uid string) int {
			objs, _ := rc.Whole().GetIndexer().ByIndex(ByUID, uid)
			return len(objs)
		}},
		{"lookup, bucketed", Indexers([]string{ByUID}), func(rc *Cache, uid string) int {
			objs, _ := rc.ByIndex(ByUID, uid)
			return len(objs)
		}},
	}
	for _, tc := range lookups {
		b.Run(tc.name, func(b *testing.B) {
			inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &metav1.PartialObjectMetadata{}, 0, tc.indexes)
			for _, o := range objs {
				if err := inf.GetIndexer().Add(o); err != nil {
					b.Fatal(err)
				}
			}
			rc := Fixed(schema.GroupVersionResource{}, inf)
			i := 0
			for b.Loop() {
				if got := tc.lookup(rc, string(objs[(i*7919)%n].UID)); got != 1 {
					b.Fatalf("%d objects", got)
				}
				i++
			}
		})
	}
}
