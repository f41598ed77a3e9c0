//go:build e2e

package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestASampleIsInTheFirstCategoryThatHoldsItsStack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stack []string
		want  string
	}{
		{"an apply's YAML parse is the apply's, not the patch's", []string{"go.yaml.in/yaml/v2.(*parser).parse", "sigs.k8s.io/yaml.Unmarshal",
			"k8s.io/apiserver/pkg/endpoints/handlers.(*applyPatcher).applyPatchToCurrentObject", "k8s.io/apiserver/pkg/endpoints/handlers.(*patcher).patchResource.func2"},
			"PATCH (APPLY): the body parsed as YAML"},
		{"server-side apply's merge under an apply", []string{"k8s.io/apimachinery/pkg/util/managedfields/internal.(*FieldManager).Apply",
			"k8s.io/apiserver/pkg/endpoints/handlers.(*applyPatcher).applyPatchToCurrentObject", "k8s.io/apiserver/pkg/endpoints/handlers.(*patcher).patchResource.func2"},
			"PATCH (APPLY): server-side apply's merge"},
		{"the managed fields of a create are the create's", []string{"k8s.io/apimachinery/pkg/util/managedfields/internal.(*FieldManager).Update",
			"k8s.io/apiserver/pkg/endpoints/handlers.CreateResource.createHandler.func1.2"},
			"POST of built-in kinds (Pods, events)"},
		{"a custom resource's create", []string{"k8s.io/apiserver/pkg/registry/generic/registry.(*Store).Create",
			"k8s.io/apiextensions-apiserver/pkg/apiserver.(*crdHandler).serveResource.CreateResource.createHandler.func9.2"},
			"POST of custom resources (the load client's MyApps)"},
		{"a custom resource's status update, not its storage's watch cache", []string{"k8s.io/apiserver/pkg/storage/cacher.(*CacheDelegator).GuaranteedUpdate",
			"k8s.io/apiextensions-apiserver/pkg/apiserver.(*crdHandler).serveStatus.UpdateResource.func1.4"},
			"PUT"},
		{"a watch's encoding", []string{"encoding/json.Marshal", "k8s.io/apiserver/pkg/endpoints/handlers.(*WatchServer).HandleHTTP"},
			"watch: encoding and sending events"},
		{"the filters of a request", []string{"k8s.io/apiserver/pkg/endpoints/filters.withAuthentication.func1", "net/http.(*conn).serve"},
			"HTTP, TLS and request filters (authentication, authorization, priority and fairness)"},
		{"the GC's mark worker", []string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, "garbage collection"},
		{"anything else", []string{"runtime.futex", "runtime.notesleep"}, otherCategory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := categoryOf(tc.stack); got != tc.want {
				t.Errorf("categoryOf = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTracesAreSortedBySampleAndSummed(t *testing.T) {
	raw, err := os.ReadFile("testdata/kube-apiserver.traces")
	if err != nil {
		t.Fatal(err)
	}
	p, err := sortTraces(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"PATCH (APPLY): the body parsed as YAML": 0.02,
		"POST of built-in kinds (Pods, events)":  0.01,
		"garbage collection":                     0.03,
		otherCategory:                            0.01,
	}
	if len(p.by) != len(want) {
		t.Errorf("categories %v, want %v", p.by, want)
	}
	for name, s := range want {
		if math.Abs(p.by[name]-s) > 1e-9 {
			t.Errorf("%s: %.3f s, want %.3f", name, p.by[name], s)
		}
	}
	if math.Abs(p.seconds-0.07) > 1e-9 {
		t.Errorf("all: %.3f s, want 0.070", p.seconds)
	}
}

func TestTheFirstRunOfEachProfiledConfigurationIsProfiledUnderBothControllers(t *testing.T) {
	configs := map[string]benchConfig{}
	for _, c := range configurations("") {
		configs[c.name] = c
	}
	for _, tc := range []struct {
		name           string
		profileConfigs string
		ctl, config    string
		rep            int
		want           bool
	}{
		{"metacel in a listed configuration", "unthrottled,conditions", metacel, "conditions", 0, true},
		{"the hand-written controller in a listed configuration", "unthrottled,conditions", handwritten, "unthrottled", 0, true},
		{"only the first repetition", "unthrottled", metacel, "unthrottled", 1, false},
		{"not an unlisted configuration", "unthrottled", metacel, "defaults", 0, false},
		{"the hand-written run that a listed configuration shares", "defaults", handwritten, "unthrottled", 0, true},
		{"not metacel in the configuration whose hand-written run is shared", "defaults", metacel, "unthrottled", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &bench{o: options{profile: time.Second, profileConfig: tc.profileConfigs}}
			if got := b.profiled(tc.ctl, configs[tc.config], tc.rep); got != tc.want {
				t.Errorf("profiled = %v, want %v", got, tc.want)
			}
		})
	}
	if (&bench{o: options{profileConfig: "unthrottled"}}).profiled(metacel, configs["unthrottled"], 0) {
		t.Error("profiled without -profile")
	}
}
