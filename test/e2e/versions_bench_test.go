//go:build e2e

package e2e

import (
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"metacel.dev/metacel/runtime/operator"
)

// BenchmarkListingParentsThroughTheConversionWebhook lists 10,000 Caches stored at v1, a page of
// 500 at a time as kubectl does, at v1 (the storage version: the baseline, no conversion) and at
// v1alpha1 (each page converted by the runtime's webhook), and reports both.
//
//	go test -tags e2e -run '^$' -bench ListingParentsThroughTheConversionWebhook -benchtime 5x ./test/e2e
func BenchmarkListingParentsThroughTheConversionWebhook(b *testing.B) {
	const parents = 10_000
	api := newCacheAPI(b)
	v1alpha1, v1, policyNS, parentNS := api.v1alpha1, api.v1, api.policyNS, api.parentNS
	text := newCachePolicy(b, api.group)
	grantPolicyText(b, policyNS, text)
	startRuntimeWith(b, operator.Options{PolicyNamespace: policyNS, Webhook: loopbackWebhook(b)})
	applyConfigMap(b, installPolicyConfigMap("policy-cache", policyNS, text))
	waitFor(b, crdsGVR, "", api.crd, wait, established)
	createWhenServed(b, v1, cacheAt(v1, parentNS, "first", map[string]any{"replicas": int64(1), "template": map[string]any{"image": "redis:7"}}))
	createCaches(b, v1, parentNS, parents)

	listAll := func(gvr schema.GroupVersionResource) time.Duration {
		start := time.Now()
		n, opts := 0, metav1.ListOptions{Limit: 500}
		for {
			list, err := cluster.dynamic.Resource(gvr).Namespace(parentNS).List(b.Context(), opts)
			if err != nil {
				b.Fatalf("list at %s: %v", gvr.Version, err)
			}
			n += len(list.Items)
			if opts.Continue = list.GetContinue(); opts.Continue == "" {
				break
			}
		}
		if n != parents+1 {
			b.Fatalf("listed %d at %s, want %d", n, gvr.Version, parents)
		}
		return time.Since(start)
	}
	listAll(v1alpha1) // the webhook's first connections
	var stored, converted time.Duration
	for b.Loop() {
		stored += listAll(v1)
		converted += listAll(v1alpha1)
	}
	b.ReportMetric(float64(stored.Milliseconds())/float64(b.N), "ms/list-at-storage-version")
	b.ReportMetric(float64(converted.Milliseconds())/float64(b.N), "ms/list-converted")
}

// createCaches creates n Caches at gvr's version (v1), 16 at a time.
func createCaches(b *testing.B, gvr schema.GroupVersionResource, ns string, n int) {
	next := make(chan int)
	var wg sync.WaitGroup
	var failed sync.Once
	var firstErr error
	for range 16 {
		wg.Go(func() {
			for i := range next {
				obj := cacheAt(gvr, ns, fmt.Sprintf("c%05d", i), map[string]any{"replicas": int64(i % 7), "template": map[string]any{"image": "redis:7"}})
				if _, err := cluster.dynamic.Resource(gvr).Namespace(ns).Create(b.Context(), obj, metav1.CreateOptions{}); err != nil {
					failed.Do(func() { firstErr = err })
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		b.Fatalf("create the Caches: %v", firstErr)
	}
}
