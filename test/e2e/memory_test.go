//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestObjectsAnyoneMayCreateDoNotGrowTheRuntime: the ConfigMapSync policy reads ConfigMaps by
// name in any namespace, so the runtime watches every ConfigMap; anyone may create ConfigMaps,
// and any client may set the label that metacel's children carry. bigConfigMaps foreign 1 MB
// ConfigMaps and as many forged children of 1 MB must not make a runtime starting over them (it
// lists them all) hold more than 10 % more memory than one starting without them, but for their
// metadata: their bodies are not cached.
// What it holds is its RSS once its garbage is collected, less the pages the Go runtime has yet
// to return to the system; its peak RSS is logged.
func TestObjectsAnyoneMayCreateDoNotGrowTheRuntime(t *testing.T) {
	bin := buildMetacel(t)
	runtimeNS, src, dst := newNamespace(t, "metacel"), newNamespace(t, "memory-src"), newNamespace(t, "memory-dst")
	policy := filepath.Join(repo, "policies", "configmapsync.yaml")
	grantPolicies(t, runtimeNS, policy)
	configMapSync(t, src, dst)
	held := func(what string) int64 {
		health, metrics := freeAddr(t), freeAddr(t)
		p := startProcess(t, bin, "run", "--kubeconfig", cluster.kubeconfig, "--policy-dir", policy, "--policy-namespace=",
			"--runtime-namespace", runtimeNS, "--metrics-bind-address", metrics, "--profiling", "--health-probe-bind-address", health)
		eventually(t, 2*time.Minute, what+": the runtime is ready", func() error { return ready(health) })
		waitFor(t, cmSyncsGVR, src, "example-sync", wait, hasCondition("Ready", "True", "", ""))
		m := collectedMemory(t, metrics)
		rss, peak := procStatus(t, p.cmd.Process.Pid, "VmRSS"), procStatus(t, p.cmd.Process.Pid, "VmHWM")
		p.kill9()
		// the pages the collector freed but the Go runtime has not returned to the system yet,
		// which its scavenger returns in the background at its own pace
		held := rss - (m["go_memstats_heap_idle_bytes"] - m["go_memstats_heap_released_bytes"])
		t.Logf("%s: RSS %.1f MiB held (%.1f MiB before the scavenger; peak %.1f MiB), live heap %.1f MiB",
			what, mib(held), mib(rss), mib(peak), mib(m["go_memstats_alloc_bytes"]))
		return held
	}
	before := held("without the objects")

	t.Cleanup(func() { // no runtime is left to remove the parent's cleanup finalizer
		_, _ = kubectlCmd(context.Background(), "patch", "configmapsyncs", "example-sync", "-n", src, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	})
	foreign, forged := newNamespace(t, "memory-foreign"), newNamespace(t, "memory-forged")
	t.Cleanup(func() { deleteAllConfigMaps(t, foreign, forged) })
	createMegabyteConfigMaps(t, foreign, bigConfigMaps, nil)
	createMegabyteConfigMaps(t, forged, bigConfigMaps, map[string]string{"app.kubernetes.io/managed-by": "metacel", "metacel.dev/policy": "configmapsync"})
	after := held(fmt.Sprintf("over %d foreign and %d forged 1 MB ConfigMaps", bigConfigMaps, bigConfigMaps))
	// their metadata is cached (name, UID, labels: about 1 KB a cache entry, and the forged ones
	// are in two caches), their bodies are not: 10 % over the runtime without them, plus 4 KiB
	// an object for the metadata and what the collector keeps around it, independent of their size
	if limit := before + before/10 + 2*bigConfigMaps*4<<10; after > limit {
		t.Errorf("a runtime that listed %d ConfigMaps of 1 MB that no policy reads holds %.1f MiB RSS, "+
			"against %.1f MiB without them: more than 10 %% and 4 KiB an object more (%.1f MiB)", 2*bigConfigMaps, mib(after), mib(before), mib(limit))
	}
}

// bigConfigMaps is how many 1 MB ConfigMaps TestObjectsAnyoneMayCreateDoNotGrowTheRuntime creates
// of each sort: their bodies, were they cached, would be 2 × bigConfigMaps MB, over six times the
// test's 10 % of a runtime's memory (about 50 MB) and its allowance for their metadata (4 KiB an
// object). 500 of each took about a minute more of the suite to write, list and delete, and
// told no more.
const bigConfigMaps = 150

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// collectedMemory reads a runtime's go_memstats metrics after collecting its garbage (heap
// profiles with gc=1 force a collection), twice: the first leaves what sync.Pools held (the
// HTTP/2 transport's buffers of the lists' bytes) in their victim caches, the second frees it.
func collectedMemory(t *testing.T, addr string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, path := range []string{"/debug/pprof/heap?gc=1", "/debug/pprof/heap?gc=1", "/metrics"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if path != "/metrics" {
			continue
		}
		for line := range strings.SplitSeq(string(body), "\n") {
			name, v, ok := strings.Cut(line, " ")
			if !ok || !strings.HasPrefix(name, "go_memstats_") {
				continue
			}
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				out[name] = int64(f)
			}
		}
	}
	for _, name := range []string{"go_memstats_alloc_bytes", "go_memstats_heap_idle_bytes", "go_memstats_heap_released_bytes"} {
		if _, ok := out[name]; !ok {
			t.Fatalf("no %s in the runtime's metrics", name)
		}
	}
	return out
}

// createMegabyteConfigMaps creates n ConfigMaps of about 1 MB in ns, 8 at a time.
func createMegabyteConfigMaps(t *testing.T, ns string, n int, labels map[string]string) {
	t.Helper()
	value := strings.Repeat("m", 1_000_000)
	next := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range next {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%03d", i), Labels: labels}, Data: map[string]string{"v": value}}
				if _, err := cluster.kube.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// deleteAllConfigMaps deletes the ConfigMaps of namespaces and waits until they are gone, so that
// a gigabyte of deletions is not left for the namespace controller while the next tests run.
func deleteAllConfigMaps(t *testing.T, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range namespaces {
		_ = cluster.kube.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	}
	eventually(t, 2*time.Minute, "the large ConfigMaps are gone", func() error {
		for _, ns := range namespaces {
			list, err := cluster.kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1}) // by name: big-... before kube-root-ca.crt
			if err != nil {
				return err
			}
			for _, cm := range list.Items {
				if strings.HasPrefix(cm.Name, "big-") {
					return fmt.Errorf("%s/%s is still there", ns, cm.Name)
				}
			}
		}
		return nil
	})
}

// freeAddr is a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().String()
}

// ready is nil once the runtime at addr says its caches have synced.
func ready(addr string) error {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", resp.Status)
	}
	return nil
}

// procStatus reads a field of /proc/<pid>/status given in kB, in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == field {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
