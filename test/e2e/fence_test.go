//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
)

// fencePolicy is the resync policy (testdata/policies/resync: Widget -> ConfigMap, re-synced every
// second) whose children also name the replica that wrote them: writer.
func fencePolicy(t *testing.T, writer string) string {
	t.Helper()
	const color = "          color: \"${parent.spec.?color.orValue('none')}\"\n"
	text := readFile(t, filepath.Join("testdata", "policies", "resync", "widget.yaml"))
	if !strings.Contains(text, color) {
		t.Fatalf("the resync policy has no %q", color)
	}
	return strings.Replace(text, color, color+"          writer: \""+writer+"\"\n", 1)
}

// TestPausedLeaderWritesNothing pauses the leader (SIGSTOP) past its Lease, lets the standby
// take over and converge parents changed meanwhile, resumes the old leader (SIGCONT) and shows,
// from the API server, that it writes nothing more before it exits on the lost Lease.
//
// The replicas are `metacel run` processes (a process must be stopped, not a goroutine), each
// with its own identity at the API server: its kubeconfig impersonates a user of its own. A
// validating admission webhook served by the test records every write the API server admits
// in the parents' namespace, with the user who made it; its failure policy is Fail, so a write
// the recorder did not see was not made.
//
// The replicas' policies differ only in a marker each writes into its children (writer: a or
// b). A paused leader wakes up with stale caches and queues: whether identical policies would
// make it write depends on a race between its informers catching up and its workers; with the
// marker, every parent the standby converged differs from what the old leader wants, as after a
// policy change it missed, so without the fence it writes as soon as it syncs (a re-sync every
// second) and the test fails (it did: 44 to 86 writes in the 3 s before the replica noticed,
// which left children with its marker: the new leader, seeing its writes undone, stopped
// fighting).
func TestPausedLeaderWritesNothing(t *testing.T) {
	bin := buildMetacel(t)
	leaseNS := newNamespace(t, "fence-lease")
	ns := newNamespace(t, "fence")
	writes := recordWrites(t, ns)
	holder := func() string {
		lease, err := cluster.kube.CoordinationV1().Leases(leaseNS).Get(t.Context(), "metacel", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}

	a := startReplica(t, bin, "a", leaseNS)
	var aIdentity string
	eventually(t, 30*time.Second, "replica a leads", func() error {
		if aIdentity = holder(); aIdentity == "" {
			return errors.New("no holder")
		}
		return nil
	})
	const parents = 4
	for i := range parents {
		create(t, widgetsGVR, widget(ns, fmt.Sprintf("w%d", i)))
	}
	for i := range parents { // converged, statuses included: no write of a in flight when it is paused
		waitFor(t, configMapsGVR, ns, fmt.Sprintf("w%d-widget", i), wait, hasData("writer", "a"))
		waitFor(t, widgetsGVR, ns, fmt.Sprintf("w%d", i), wait, hasStatusColor("blue"))
	}
	if n := len(writes.by(a.user, time.Time{}, time.Time{})); n == 0 {
		t.Fatal("the recorder saw no write of the leader: it cannot count them")
	}
	b := startReplica(t, bin, "b", leaseNS)

	paused := time.Now()
	a.signal(syscall.SIGSTOP)
	// work for the paused leader: every parent changes, new ones come
	for i := range parents {
		patch(t, widgetsGVR, ns, fmt.Sprintf("w%d", i), `{"spec":{"color":"green"}}`)
	}
	create(t, widgetsGVR, widget(ns, "during-pause"))
	eventually(t, 30*time.Second, "replica b takes over", func() error {
		if h := holder(); h == "" || h == aIdentity {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	t.Logf("replica b took over %s after replica a was paused", time.Since(paused).Round(time.Millisecond))
	for i := range parents {
		waitFor(t, configMapsGVR, ns, fmt.Sprintf("w%d-widget", i), wait, both(hasData("writer", "b"), hasData("color", "green")))
		waitFor(t, widgetsGVR, ns, fmt.Sprintf("w%d", i), wait, hasStatusColor("green"))
	}
	waitFor(t, configMapsGVR, ns, "during-pause-widget", wait, both(hasData("writer", "b"), hasData("color", "blue")))

	resumed := time.Now()
	a.signal(syscall.SIGCONT)
	// Replica a notices the lost Lease at its next renewal, RenewDeadline (3 s) after it resumes
	// at most, and exits; once it has exited it writes nothing. The API server may still be
	// admitting a request it sent just before: a second is ample on a local control plane.
	select {
	case <-a.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("replica a did not exit within 20 s of SIGCONT")
	}
	t.Logf("replica a exited %s after SIGCONT: %v", time.Since(resumed).Round(time.Millisecond), a.err)
	time.Sleep(time.Second) // the observation window's tail, see above
	if after := writes.by(a.user, resumed, time.Time{}); len(after) > 0 {
		t.Errorf("replica a made %d writes after SIGCONT, want 0:\n%s", len(after), strings.Join(after, "\n"))
	}
	if during := writes.by(a.user, paused, resumed); len(during) > 0 {
		// sent before the pause, admitted during it: what the fence cannot recall
		t.Logf("replica a's writes admitted while it was paused: %s", strings.Join(during, "; "))
	}
	if n := len(writes.by(b.user, paused, time.Time{})); n == 0 {
		t.Error("replica b made no write after the pause")
	}
	if a.err == nil || !strings.Contains(a.logTail(), "lost the leader election Lease") {
		t.Errorf("replica a ended with %v, want an exit on the lost Lease", a.err)
	}
	for i := range parents { // still b's
		cm, err := get(t, configMapsGVR, ns, fmt.Sprintf("w%d-widget", i))
		if err == nil {
			err = both(hasData("writer", "b"), hasData("color", "green"))(cm)
		}
		if err != nil {
			t.Errorf("configmap w%d-widget: %v", i, err)
		}
	}
}

func both(checks ...func(*unstructured.Unstructured) error) func(*unstructured.Unstructured) error {
	return func(obj *unstructured.Unstructured) error {
		for _, c := range checks {
			if err := c(obj); err != nil {
				return err
			}
		}
		return nil
	}
}

func hasStatusColor(color string) func(*unstructured.Unstructured) error {
	return func(obj *unstructured.Unstructured) error {
		if got := str(obj, "status", "color"); got != color {
			return fmt.Errorf("status.color is %q, want %q", got, color)
		}
		return nil
	}
}

// replicaProcess is a `metacel run --leader-elect` process.
type replicaProcess struct {
	t    *testing.T
	user string // the user it is at the API server
	cmd  *exec.Cmd
	log  string
	// exited is closed once the process has exited, with err its result
	exited chan struct{}
	err    error
}

// startReplica runs a replica named name, as user metacel-replica-<name>, on fencePolicy with
// writer name, with the Lease in leaseNS and short timings: a 4 s Lease, renewed every second,
// given up 3 s after a failed renewal began. It is stopped when the test ends.
func startReplica(t *testing.T, bin, name, leaseNS string) *replicaProcess {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	policies := filepath.Join(dir, "policies")
	if err := os.MkdirAll(policies, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(policies, "widget.yaml"), []byte(fencePolicy(t, name)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &replicaProcess{t: t, user: "metacel-replica-" + name, log: filepath.Join(dir, "log"), exited: make(chan struct{})}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	impersonatingKubeconfig(t, kubeconfig, p.user)
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	p.cmd = exec.Command(bin, "run", "--allow-policies-without-service-account", "--leader-elect", "--kubeconfig", kubeconfig,
		"--policy-dir", policies, "--policy-namespace=", "--leader-election-namespace", leaseNS,
		"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=1s",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--v=1")
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.signal(syscall.SIGCONT)
			p.signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(15 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		}
		if t.Failed() {
			t.Logf("replica %s (%s):\n%s", name, p.user, p.logTail())
		}
	})
	return p
}

func (p *replicaProcess) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Errorf("signal %s to replica %s: %v", sig, p.user, err)
	}
}

// logTail returns the last 80 lines of the replica's log.
func (p *replicaProcess) logTail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-80):], "\n")
}

// impersonatingKubeconfig writes the cluster's kubeconfig to path, impersonating user (in the
// group system:masters, so that it needs no RBAC of its own).
func impersonatingKubeconfig(t *testing.T, path, user string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(cluster.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, auth := range cfg.AuthInfos {
		auth.Impersonate, auth.ImpersonateGroups = user, []string{"system:masters"}
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

// writeRecorder holds the writes the API server admitted in a namespace.
type writeRecorder struct {
	mu      sync.Mutex
	entries []admittedWrite
}

type admittedWrite struct {
	at                   time.Time
	user, operation, obj string
}

// by returns the writes of user admitted from since until until (zero: no bound).
func (r *writeRecorder) by(user string, since, until time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.entries {
		if e.user == user && !e.at.Before(since) && (until.IsZero() || e.at.Before(until)) {
			out = append(out, fmt.Sprintf("%s %s %s", e.at.Format("15:04:05.000"), e.operation, e.obj))
		}
	}
	return out
}

func (r *writeRecorder) saw(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.entries {
		if strings.HasSuffix(e.obj, "/"+name) {
			return true
		}
	}
	return false
}

func (r *writeRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(req.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	in := review.Request
	resource := in.Resource.Resource
	if in.SubResource != "" {
		resource += "/" + in.SubResource
	}
	r.mu.Lock()
	r.entries = append(r.entries, admittedWrite{at: time.Now(), user: in.UserInfo.Username, operation: string(in.Operation), obj: resource + " " + in.Namespace + "/" + in.Name})
	r.mu.Unlock()
	review.Response = &admissionv1.AdmissionResponse{UID: in.UID, Allowed: true}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// recordWrites registers a validating webhook, served by the test, that records every create,
// update and delete the API server admits in namespace ns (any resource or subresource), until
// the test ends; it returns once the API server calls it.
func recordWrites(t *testing.T, ns string) *writeRecorder {
	t.Helper()
	rec := &writeRecorder{}
	srv := httptest.NewTLSServer(rec) // its certificate is for 127.0.0.1
	t.Cleanup(srv.Close)
	url := srv.URL + "/writes"
	fail, none, scope := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.NamespacedScope
	timeout := int32(10)
	hooks := cluster.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	hook, err := hooks.Create(t.Context(), &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "metacel-e2e-writes-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "writes.e2e.metacel.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL:      &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}, Scope: &scope},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// runs before srv.Close: the namespace's deletion must not call a closed recorder
	t.Cleanup(func() {
		_ = hooks.Delete(context.Background(), hook.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &hook.UID}})
	})
	eventually(t, 30*time.Second, "the API server calls the write recorder", func() error {
		probe, err := cluster.kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !rec.saw(probe.Name) {
			return fmt.Errorf("not called for configmap %s", probe.Name)
		}
		return nil
	})
	return rec
}
