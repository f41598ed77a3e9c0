//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// On 2 cores a converge is bound by the control plane's CPU, so where kube-apiserver spends it
// is where a controller's converge time goes. With -profile, the bench starts each control plane
// of the profiled configuration's first repetition with kube-apiserver's --profiling, takes a
// CPU profile of it from the burst on for both controllers, and sorts every sample into what
// kube-apiserver was doing (serverCategories): the two controllers' columns side by side show
// which of their requests costs the difference.

// serverCategory is one thing kube-apiserver does: a sample is in it when its stack holds a
// frame containing each of all, and one containing any of any (when any is set).
type serverCategory struct {
	name     string
	all, any []string
}

// serverCategories in the order a sample is matched: the first that holds it takes it. A
// request's own work runs in a goroutine of its own (the handlers' finisher) whose stack holds
// the handler but not the request filters, so the filters' row is what the chain costs.
var serverCategories = []serverCategory{
	{name: "PATCH (APPLY): the body parsed as YAML", all: []string{"handlers.(*applyPatcher)", "yaml"}},
	{name: "PATCH (APPLY): server-side apply's merge", all: []string{"handlers.(*applyPatcher)", "managedfields"}},
	{name: "PATCH: decoding, validation, storage, response", any: []string{"handlers.(*patcher)", "handlers.PatchResource"}},
	{name: "PUT", any: []string{"UpdateResource"}}, // handlers.UpdateResource, and a custom resource's: crdHandler).serveStatus.UpdateResource
	{name: "POST of custom resources (the load client's MyApps)", any: []string{"crdHandler).serveResource.CreateResource"}},
	{name: "POST of built-in kinds (Pods, events)", any: []string{"handlers.CreateResource"}},
	{name: "GET and LIST", any: []string{"handlers.ListResource", "handlers.GetResource"}},
	{name: "watch: encoding and sending events", any: []string{"handlers.handleWatch", "handlers.(*WatchServer)", "handlers.serveWatch"}},
	{name: "watch cache and etcd's watch", any: []string{"storage/cacher.", "etcd3.(*watchChan)"}},
	{name: "HTTP, TLS and request filters (authentication, authorization, priority and fairness)", any: []string{
		"net/http.(*conn).serve", "crypto/tls.", "k8s.io/apiserver/pkg/server/filters.", "k8s.io/apiserver/pkg/endpoints/filters.", "golang.org/x/net/http2."}},
	{name: "garbage collection", any: []string{"runtime.gcBgMarkWorker", "runtime.gcDrain", "runtime.bgsweep", "runtime.bgscavenge"}},
}

// otherCategory holds the samples no category takes.
const otherCategory = "other"

// serverProfile is a kube-apiserver CPU profile sorted into serverCategories.
type serverProfile struct {
	file    string             // the profile
	seconds float64            // its CPU seconds sampled
	by      map[string]float64 // CPU seconds by category name
}

// fetchServerProfile takes a CPU profile of kube-apiserver for d (the control plane must run
// with METACEL_APISERVER_PROFILING=true) and sorts it; path is where the profile goes.
func fetchServerProfile(ctx context.Context, cl *cluster, d time.Duration, path string) (*serverProfile, error) {
	raw, err := cl.kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(int(d.Seconds()))).Timeout(d + time.Minute).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver's CPU profile: %w", err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return nil, err
	}
	traces, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-traces", path).Output()
	if err != nil {
		return nil, fmt.Errorf("go tool pprof -traces %s: %w", path, err)
	}
	p, err := sortTraces(bytes.NewReader(traces))
	if err != nil {
		return nil, err
	}
	p.file = path
	return p, nil
}

// sortTraces reads `go tool pprof -traces` of a CPU profile (a header, then each sample's
// value and stack between separator lines) and adds each sample's seconds to its category.
func sortTraces(r io.Reader) (*serverProfile, error) {
	p := &serverProfile{by: map[string]float64{}}
	var value float64
	var stack []string
	flush := func() {
		if stack != nil {
			p.by[categoryOf(stack)] += value
			p.seconds += value
		}
		value, stack = 0, nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "-----------+"):
			flush()
		case strings.HasPrefix(line, " ") && stack == nil && strings.TrimSpace(line) != "":
			// the sample's first line: its value, then its leaf frame
			fields := strings.Fields(line)
			d, err := time.ParseDuration(fields[0])
			if err != nil {
				return nil, fmt.Errorf("a sample's value %q: %w", fields[0], err)
			}
			value, stack = d.Seconds(), fields[1:]
		case stack != nil:
			stack = append(stack, strings.TrimSpace(line))
		}
	}
	flush()
	return p, sc.Err()
}

// categoryOf is the name of the first serverCategory that holds stack, or otherCategory.
func categoryOf(stack []string) string {
	holds := func(s string) bool {
		return slices.ContainsFunc(stack, func(frame string) bool { return strings.Contains(frame, s) })
	}
	for _, c := range serverCategories {
		if holdsAll(c.all, holds) && (len(c.any) == 0 || slices.ContainsFunc(c.any, holds)) {
			return c.name
		}
	}
	return otherCategory
}

// holdsAll reports whether holds is true of every one of subs.
func holdsAll(subs []string, holds func(string) bool) bool {
	for _, s := range subs {
		if !holds(s) {
			return false
		}
	}
	return true
}

// serverProfileTable sets the two controllers' kube-apiserver profiles of what (a configuration
// and the part of its run) side by side: the baseline's (base names it) and metacel's.
func serverProfileTable(what, base string, hand, meta *serverProfile, d time.Duration) string {
	if hand == nil || meta == nil {
		return ""
	}
	var t strings.Builder
	fmt.Fprintf(&t, "\nWhere kube-apiserver's CPU went (%s; first run: a %s CPU profile of kube-apiserver; %s and %s):\n\n",
		what, d, filepath.Base(hand.file), filepath.Base(meta.file))
	fmt.Fprintf(&t, "| kube-apiserver was | %s CPU s | metacel CPU s | metacel − %s |\n|---|--:|--:|--:|\n", base, base)
	names := make([]string, 0, len(serverCategories)+1)
	for _, c := range serverCategories {
		names = append(names, c.name)
	}
	for _, n := range append(names, otherCategory) {
		h, m := hand.by[n], meta.by[n]
		if h == 0 && m == 0 {
			continue
		}
		fmt.Fprintf(&t, "| %s | %.2f | %.2f | %+.2f |\n", n, h, m, m-h)
	}
	fmt.Fprintf(&t, "| all | %.2f | %.2f | %+.2f |\n", hand.seconds, meta.seconds, meta.seconds-hand.seconds)
	return t.String()
}
