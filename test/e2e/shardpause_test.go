//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"metacel.dev/metacel/runtime/hashslot"
	"metacel.dev/metacel/runtime/shard"
)

// writesAudit makes the API server log every write (not reads), with who sent it and the answer.
const writesAudit = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: None
    verbs: [get, list, watch]
  - level: Metadata
`

// TestAPausedShardedReplicaWritesNothingUntilItRejoins freezes (SIGSTOP) one of three sharded
// replicas past its Lease while the parents of its slots change twice, then thaws it (SIGCONT):
// the API server's audit log shows no write by it, between its freeze and its first successful
// write of the slot table after the thaw (how it takes slots again), for anything but its Lease
// and that table; and every parent ends with its latest spec. On an API server with and without
// the ShardedListAndWatch gate.
func TestAPausedShardedReplicaWritesNothingUntilItRejoins(t *testing.T) {
	bin := buildMetacel(t)
	for _, gate := range []struct{ name, env string }{
		{"the API server selects shards", "METACEL_FEATURE_GATES=ShardedListAndWatch=true"},
		{"the API server ignores shard selectors", ""},
	} {
		t.Run(gate.name, func(t *testing.T) {
			c := startAuditedControlPlane(t, writesAudit, gate.env)
			tg, kubeconfig := c.target, c.kubeconfig
			installCRD(t, tg.dyn, filepath.Join("testdata", "crds", "widget.yaml"))
			policyNS, ns := createNamespace(t, tg.kube, "pause-policies"), createNamespace(t, tg.kube, "pause")
			shardPolicy(t, tg.kube, policyNS)
			procs := map[string]*process{}
			for _, id := range []string{"r-a", "r-b", "r-c"} {
				procs[id] = startProcess(t, bin, "run", "--allow-policies-without-service-account", "--kubeconfig", kubeconfig, "--policy-namespace", policyNS, "--shards=auto",
					"--shard-identity", id, "--shard-lease-duration=6s", "--shard-renew-deadline=4s", "--shard-renew-interval=1s",
					"--metrics-bind-address=0", "--health-probe-bind-address=0", "--v=2")
			}
			sharedAmong(t, tg.kube, policyNS, "r-a", "r-b", "r-c")
			const parents = 150
			createWidgets(t, tg.dyn, ns, "w", parents)
			waitForColors(t, tg, ns, nil, parents)

			frozen := slotsOf(shardLeases(t, tg.kube, policyNS)["r-c"])
			procs["r-c"].signal(syscall.SIGSTOP)
			stopped := time.Now()
			latest := map[string]string{}
			for _, color := range []string{"green", "red"} {
				for _, w := range widgetsIn(t, tg, ns, frozen) {
					paintWidget(t, tg, ns, w, color)
					latest[w] = color
				}
				waitForColors(t, tg, ns, latest, parents) // the survivors sync them, once r-c's Lease has expired
			}
			t.Logf("the survivors synced the frozen replica's %d parents twice, %s after the freeze", len(latest), time.Since(stopped).Round(100*time.Millisecond))
			procs["r-c"].signal(syscall.SIGCONT)
			sharedAmong(t, tg.kube, policyNS, "r-a", "r-b", "r-c")
			waitForColors(t, tg, ns, latest, parents)

			var writes []string
			var rejoined time.Time
			eventually(t, wait, "the audit log shows r-c's write of the slot table after its freeze", func() error {
				// polled: kube-apiserver logs a request after it has answered it, so r-c's Lease (sent
				// after the table's answer) can be read before the table's write is in the log
				if writes, rejoined = writesWhileAway(t, c.auditLog(), "r-c", stopped); rejoined.IsZero() {
					return errors.New("no successful write of the slot table by r-c yet")
				}
				return nil
			})
			if len(writes) > 0 {
				t.Errorf("r-c wrote %d times between its freeze and its rejoining %s later, e.g. %s",
					len(writes), rejoined.Sub(stopped).Round(100*time.Millisecond), strings.Join(writes[:min(5, len(writes))], "; "))
			}
		})
	}
}

// signal sends sig to the process.
func (p *process) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// widgetsIn returns the names of the Widgets of ns whose UIDs are in slots.
func widgetsIn(t *testing.T, tg target, ns string, slots hashslot.Set) []string {
	t.Helper()
	list, err := tg.dyn.Resource(widgetsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, w := range list.Items {
		if slots.Has(hashslot.Of(w.GetUID())) {
			out = append(out, w.GetName())
		}
	}
	if len(out) == 0 {
		t.Fatalf("no Widget in the slots %s", slots.String())
	}
	return out
}

func paintWidget(t *testing.T, tg target, ns, name, color string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"color":%q}}`, color)
	if _, err := tg.dyn.Resource(widgetsGVR).Namespace(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitForColors waits until each of the n Widgets of ns shows, in its status and its child
// ConfigMap, its color of want (blue when not in want).
func waitForColors(t *testing.T, tg target, ns string, want map[string]string, n int) {
	t.Helper()
	eventually(t, 2*wait, "every Widget shows its latest color", func() error {
		widgets, err := tg.dyn.Resource(widgetsGVR).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		cms, err := tg.kube.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		child := map[string]string{}
		for _, cm := range cms.Items {
			child[cm.Name] = cm.Data["color"]
		}
		wrong := 0
		var example string
		for _, w := range widgets.Items {
			color := want[w.GetName()]
			if color == "" {
				color = "blue"
			}
			if status, data := str(&w, "status", "color"), child[w.GetName()+"-shard"]; status != color || data != color {
				wrong++
				example = fmt.Sprintf("%s: status %q, ConfigMap %q, want %q", w.GetName(), status, data, color)
			}
		}
		if len(widgets.Items) != n || wrong > 0 {
			return fmt.Errorf("%d Widgets, %d not showing their color (e.g. %s)", len(widgets.Items), wrong, example)
		}
		return nil
	})
}

// writesWhileAway reads the audit log: the writes the replica sent after since and before its
// first successful write of the slot table after since (when it rejoined), other than of its
// Lease and that table.
func writesWhileAway(t *testing.T, log, replica string, since time.Time) (writes []string, rejoined time.Time) {
	t.Helper()
	var candidates []auditEvent
	for _, e := range auditEvents(t, log) {
		if e.replica() != replica || e.ObjectRef == nil || e.RequestReceivedTimestamp.Before(since) {
			continue
		}
		switch {
		case e.ObjectRef.Resource == "leases":
		case e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Name == shard.TableName:
			if e.ResponseStatus != nil && e.ResponseStatus.Code < 300 && (rejoined.IsZero() || e.RequestReceivedTimestamp.Before(rejoined)) {
				rejoined = e.RequestReceivedTimestamp
			}
		default:
			candidates = append(candidates, e)
		}
	}
	for _, e := range candidates {
		if rejoined.IsZero() || e.RequestReceivedTimestamp.Before(rejoined) {
			writes = append(writes, fmt.Sprintf("%s %s %s/%s %s at +%s", e.Verb, e.ObjectRef.Resource, e.ObjectRef.Namespace, e.ObjectRef.Name,
				e.ObjectRef.Subresource, e.RequestReceivedTimestamp.Sub(since).Round(time.Millisecond)))
		}
	}
	return writes, rejoined
}
