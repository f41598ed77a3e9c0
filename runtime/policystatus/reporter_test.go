package policystatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"metacel.dev/metacel/runtime/contract"
)

const ns = "metacel-system"

var running = Status{State: Running, Version: hashA, Parents: 2, Ready: 2}

// policyConfigMap is a policy ConfigMap as a user applies it.
func policyConfigMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name),
			Labels: map[string]string{"metacel.dev/policy": "true"}},
		Data: map[string]string{"policy.yaml": "kind: CompositePolicy"},
	}
}

type harness struct {
	t      *testing.T
	client *fake.Clientset
	clock  *clocktesting.FakeClock
	r      *Reporter
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	client := fake.NewClientset(objs...)
	emulateUIDPrecondition(client)
	h := &harness{t: t, client: client, clock: clocktesting.NewFakeClock(time.Unix(1_000_000, 0))}
	h.restart()
	return h
}

// restart gives the harness a new Reporter, as a restarted runtime has.
func (h *harness) restart() {
	h.r = newReporter(h.client, ns, h.clock)
	h.t.Cleanup(h.r.queue.ShutDown)
}

// flush processes every ConfigMap the Reporter tracks, as Run processes each one its queue gives:
// those not due wait.
func (h *harness) flush() {
	h.t.Helper()
	h.r.mu.Lock()
	names := slices.Collect(maps.Keys(h.r.entries))
	h.r.mu.Unlock()
	for _, name := range names {
		h.r.process(h.t.Context(), name)
	}
}

// writes counts the patches (applies) sent so far.
func (h *harness) writes() int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "patch" || a.GetVerb() == "create" || a.GetVerb() == "update" {
			n++
		}
	}
	return n
}

func (h *harness) configMap(name string) *corev1.ConfigMap {
	h.t.Helper()
	cm, err := h.client.CoreV1().ConfigMaps(ns).Get(h.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return cm
}

func (h *harness) wantWrites(n int) {
	h.t.Helper()
	if got := h.writes(); got != n {
		h.t.Errorf("%d writes, want %d", got, n)
	}
}

// emulateUIDPrecondition makes the fake refuse, as the API server does, an apply naming a UID
// that the object does not have: Conflict when there is no object (the fake's tracker would
// create it), Invalid (metadata.uid is immutable) when another object has the name.
func emulateUIDPrecondition(client *fake.Clientset) {
	client.PrependReactor("patch", "configmaps", func(action k8stesting.Action) (bool, runtime.Object, error) {
		patch := action.(k8stesting.PatchAction)
		if patch.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		var applied corev1ac.ConfigMapApplyConfiguration
		if err := json.Unmarshal(patch.GetPatch(), &applied); err != nil || applied.UID == nil {
			return false, nil, err
		}
		live, err := client.Tracker().Get(action.GetResource(), patch.GetNamespace(), patch.GetName())
		if apierrors.IsNotFound(err) {
			return true, nil, apierrors.NewConflict(action.GetResource().GroupResource(), patch.GetName(), errors.New("uid mismatch"))
		}
		if err == nil && live.(*corev1.ConfigMap).UID != *applied.UID {
			return true, nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("ConfigMap").GroupKind(), patch.GetName(),
				field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), *applied.UID, "field is immutable")})
		}
		return false, nil, nil
	})
}

func TestManySetsMakeOneWritePerInterval(t *testing.T) {
	h := newHarness(t, policyConfigMap("web"))
	for i := range 50 {
		h.r.Set("web", "web", Status{State: Running, Version: hashA, Parents: i})
	}
	h.flush()
	h.wantWrites(1)
	if got := h.configMap("web").Labels[contract.LabelPolicyParents]; got != "49" {
		t.Errorf("parents %q, want the last status's 49", got)
	}

	h.r.Set("web", "web", running)
	h.flush()
	h.wantWrites(1) // within the interval: it waits
	if wait, pending := h.r.nextDue("web"); !pending || wait != time.Second {
		t.Errorf("next write in %v (pending %v), want 1s", wait, pending)
	}
	h.clock.Step(time.Second)
	h.flush()
	h.wantWrites(2)
}

func TestNothingIsWrittenWhenNothingChanged(t *testing.T) {
	for _, tc := range []struct {
		name string
		then func(h *harness)
	}{
		{"the same status again", func(h *harness) { h.r.Set("web", "web", running) }},
		{"a change undone before the write", func(h *harness) {
			h.r.Set("web", "web", Status{State: Invalid, LastError: "boom"})
			h.r.Set("web", "web", running)
		}},
		{"a restart with the same status", func(h *harness) {
			h.restart()
			h.r.Set("web", "web", running)
		}},
		{"a policy never set is forgotten", func(h *harness) { h.r.Forget("web", "other") }},
		{"a resync finding the labels in place", func(h *harness) { h.clock.Step(resync) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, policyConfigMap("web"))
			h.r.Set("web", "web", running)
			h.flush()
			h.wantWrites(1)
			tc.then(h)
			h.clock.Step(time.Second)
			h.flush()
			h.wantWrites(1)
		})
	}
}

func TestAnIdleReporterMakesNoRequest(t *testing.T) {
	h := newHarness(t, policyConfigMap("web"))
	h.flush()
	if n := len(h.client.Actions()); n != 0 {
		t.Errorf("%d requests with no status set", n)
	}
	if len(h.r.entries) != 0 || h.r.queue.Len() != 0 {
		t.Error("nothing to do, yet something pending")
	}
}

func TestForgottenPoliciesLeaveTheConfigMap(t *testing.T) {
	h := newHarness(t, policyConfigMap("pair"))
	h.r.Set("pair", "a", running)
	h.r.Set("pair", "b", Status{State: RollingOut, Version: hashB, Parents: 1, Step: 1, Steps: 3, LastError: "slow"})
	h.flush()
	if l := h.configMap("pair").Labels; l[contract.LabelPolicyState] != "RollingOut" || l[contract.LabelPolicyParents] != "3" || l[contract.LabelPolicyRollout] != "1-of-3" {
		t.Fatalf("labels %v", l)
	}

	t.Run("one of two gone: the other's status remains", func(t *testing.T) {
		h.r.Forget("pair", "b")
		h.clock.Step(time.Second)
		h.flush()
		cm := h.configMap("pair")
		if l := cm.Labels; l[contract.LabelPolicyState] != "Running" || l[contract.LabelPolicyParents] != "2" || l[contract.LabelPolicyVersion] != "0123456789ab" {
			t.Errorf("labels %v", l)
		}
		if _, ok := cm.Labels[contract.LabelPolicyRollout]; ok {
			t.Error("the rollout label remains")
		}
		if _, ok := cm.Annotations[contract.AnnotationPolicyLastError]; ok {
			t.Error("the last error remains")
		}
	})
	t.Run("the last one gone: no status at all, the user's metadata and data kept", func(t *testing.T) {
		h.r.Forget("pair", "a")
		h.clock.Step(time.Second)
		h.flush()
		cm := h.configMap("pair")
		if want := (map[string]string{"metacel.dev/policy": "true"}); fmt.Sprint(cm.Labels) != fmt.Sprint(want) || len(cm.Annotations) != 0 {
			t.Errorf("labels %v, annotations %v: want only the user's label", cm.Labels, cm.Annotations)
		}
		if cm.Data["policy.yaml"] == "" {
			t.Error("the data is gone")
		}
		if _, pending := h.r.nextDue("pair"); pending || len(h.r.entries) != 0 {
			t.Error("the ConfigMap is still tracked")
		}
	})
}

func TestAMissingConfigMapIsNeverCreated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(h *harness)
	}{
		{"never existed", func(*harness) {}},
		{"deleted after a write", func(h *harness) {
			h.r.Set("web", "web", Status{State: Waiting})
			h.flush()
			if err := h.client.CoreV1().ConfigMaps(ns).Delete(h.t.Context(), "web", metav1.DeleteOptions{}); err != nil {
				h.t.Fatal(err)
			}
			h.clock.Step(time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.name != "never existed" {
				objs = append(objs, policyConfigMap("web"))
			}
			h := newHarness(t, objs...)
			tc.before(h)
			h.r.Set("web", "web", running)
			for range 5 {
				h.flush()
				h.clock.Step(maxBackoff)
			}
			if _, err := h.client.CoreV1().ConfigMaps(ns).Get(t.Context(), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the ConfigMap exists: %v", err)
			}
			if len(h.r.entries) != 0 {
				t.Error("the missing ConfigMap is still tracked")
			}
		})
	}
}

func TestAConfigMapReplacedUnderTheSameNameGetsItsStatus(t *testing.T) {
	h := newHarness(t, policyConfigMap("web"))
	h.r.Set("web", "web", Status{State: Waiting})
	h.flush()
	replaced := policyConfigMap("web")
	replaced.UID = "uid-new"
	if err := h.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), replaced, ns); err != nil {
		t.Fatal(err)
	}
	h.r.Set("web", "web", running)
	for range 3 {
		h.clock.Step(maxBackoff)
		h.flush()
	}
	if got := h.configMap("web").Labels[contract.LabelPolicyState]; got != "Running" {
		t.Errorf("state %q on the new ConfigMap, want Running", got)
	}
}

func TestFailedWritesAreRetriedWithBackoff(t *testing.T) {
	h := newHarness(t, policyConfigMap("web"))
	failures := 2
	h.client.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failures == 0 {
			return false, nil, nil
		}
		failures--
		return true, nil, apierrors.NewServiceUnavailable("etcd is busy")
	})
	h.r.Set("web", "web", running)
	h.flush() // fails
	h.clock.Step(time.Second)
	h.flush() // in backoff (2s): no request
	if got := h.writes(); got != 1 {
		t.Fatalf("%d writes, want 1 failed write and no retry within the backoff", got)
	}
	h.clock.Step(time.Second)
	h.flush() // fails again: backoff 4s
	h.clock.Step(4 * time.Second)
	h.flush()
	h.wantWrites(3)
	if got := h.configMap("web").Labels[contract.LabelPolicyState]; got != "Running" {
		t.Errorf("state %q after the retries, want Running", got)
	}
}

func TestLabelsRemovedBySomeoneElseAreRestoredAtResync(t *testing.T) {
	h := newHarness(t, policyConfigMap("web"))
	h.r.Set("web", "web", running)
	h.flush()
	if _, err := h.client.CoreV1().ConfigMaps(ns).Update(t.Context(), policyConfigMap("web"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err) // kubectl replace: the labels are gone
	}
	h.clock.Step(resync)
	h.flush()
	if got := h.configMap("web").Labels[contract.LabelPolicyState]; got != "Running" {
		t.Errorf("state %q after a resync, want Running", got)
	}
}

func TestAUsersServerSideApplyKeepsTheStatus(t *testing.T) {
	h := newHarness(t)
	userApply := func(data string) error {
		user := corev1ac.ConfigMap("web", ns).WithLabels(map[string]string{"metacel.dev/policy": "true"}).
			WithData(map[string]string{"policy.yaml": data})
		_, err := h.client.CoreV1().ConfigMaps(ns).Apply(t.Context(), user, metav1.ApplyOptions{FieldManager: "kubectl"})
		return err
	}
	if err := userApply("kind: CompositePolicy"); err != nil {
		t.Fatal(err)
	}
	h.r.Set("web", "web", running)
	h.flush()
	if err := userApply("kind: CompositePolicy # v2"); err != nil {
		t.Fatalf("the user's apply conflicts: %v", err)
	}
	if got := h.configMap("web").Labels[contract.LabelPolicyState]; got != "Running" {
		t.Errorf("state %q after the user's apply, want Running", got)
	}
	h.r.Set("web", "web", Status{State: Invalid, LastError: "boom"})
	h.clock.Step(time.Second)
	h.flush()
	cm := h.configMap("web")
	if cm.Labels[contract.LabelPolicyState] != "Invalid" || cm.Data["policy.yaml"] != "kind: CompositePolicy # v2" {
		t.Errorf("labels %v, data %v", cm.Labels, cm.Data)
	}
}

// Run writes what its queue gives when due: a status at once, the next one an interval after the
// write before, a failed write again after its backoff; and it returns once stopped.
func TestRunWritesUntilStopped(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int // of the first write
		// gap is the least time between the first write and the one that puts Running
		gap time.Duration
	}{
		{"a change within the interval", 0, interval},
		{"a failed write", 1, firstBackoff},
		{"two failed writes", 2, firstBackoff + 2*firstBackoff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, policyConfigMap("web"))
			failures := tc.failures
			h.client.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				if failures == 0 {
					return false, nil, nil
				}
				failures--
				return true, nil, apierrors.NewServiceUnavailable("etcd is busy")
			})
			writesAt := h.recordWriteTimes() // failed ones too
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); h.r.Run(ctx) }()

			h.r.Set("web", "web", Status{State: Waiting})
			if tc.failures == 0 {
				h.eventually("the first status is written at once", h.stateIs("web", "Waiting"))
			}
			h.r.Set("web", "web", running)
			h.eventually("Running is written as the clock goes on", func() error {
				if err := h.stateIs("web", "Running")(); err != nil {
					h.clock.Step(100 * time.Millisecond)
					return err
				}
				return nil
			})
			if at := writesAt(); at[len(at)-1].Sub(at[0]) < tc.gap {
				t.Errorf("writes at %v: want Running %v after the first at least", at, tc.gap)
			}
			cancel()
			<-done
		})
	}
}

// recordWriteTimes returns the times, on the harness's clock, of the writes sent so far.
func (h *harness) recordWriteTimes() func() []time.Time {
	var mu sync.Mutex
	var at []time.Time
	h.client.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, h.clock.Now())
		return false, nil, nil
	})
	return func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(at)
	}
}

func (h *harness) state(name string) string {
	cm, err := h.client.CoreV1().ConfigMaps(ns).Get(h.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Labels[contract.LabelPolicyState]
}

// stateIs returns an error naming the state of the ConfigMap unless it is want.
func (h *harness) stateIs(name, want string) func() error {
	return func() error {
		if got := h.state(name); got != want {
			return fmt.Errorf("state %q, want %q", got, want)
		}
		return nil
	}
}

// eventually polls f until it succeeds, failing the test after 10 seconds with what it waited
// for and f's last error.
func (h *harness) eventually(what string, f func() error) {
	h.t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(h.t.Context(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		last = f()
		return last == nil, nil
	}); err != nil {
		h.t.Fatalf("waiting for %s: %v (last: %v)", what, err, last)
	}
}

func TestAReporterWithoutNamespaceIsOff(t *testing.T) {
	client := fake.NewClientset(policyConfigMap("web"))
	r := NewReporter(client, "")
	r.Set("web", "web", running)
	r.Forget("web", "web")
	r.Run(t.Context()) // returns at once
	if r != nil || len(client.Actions()) != 0 {
		t.Error("a Reporter without namespace must be off (nil) and make no request")
	}
}

// A reporter that stops writing (another replica holds sharding's slot 0 now) forgets what it
// wrote: its resync put its statuses, soon stale, back over the new writer's every ten minutes.
func TestAResetReporterWritesNothingAtResync(t *testing.T) {
	h := newHarness(t, policyConfigMap("web"))
	h.r.Set("web", "web", running)
	h.flush()
	h.wantWrites(1)
	h.r.Reset()
	other := h.configMap("web") // the new writer's status
	other.Labels[contract.LabelPolicyState] = "Invalid"
	if _, err := h.client.CoreV1().ConfigMaps(ns).Update(t.Context(), other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(resync)
	h.r.process(t.Context(), "web") // as Run does when the queue gives the name, its resync due
	if got := h.configMap("web").Labels[contract.LabelPolicyState]; got != "Invalid" {
		t.Errorf("state %q after a resync, want the new writer's Invalid", got)
	}
	h.wantWrites(2) // the new writer's update alone
}

// A Reset while a write is in flight (this replica lost sharding's slot 0 as the API server was
// slow to answer) forgets the ConfigMap for good: the answer, written or failed, is recorded on
// nothing. The flush found the entry gone and crashed the runtime.
func TestAResetDuringAWriteForgetsIt(t *testing.T) {
	for _, fails := range []bool{false, true} {
		t.Run(fmt.Sprintf("the write fails: %v", fails), func(t *testing.T) {
			h := newHarness(t, policyConfigMap("web"))
			h.client.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				h.r.Reset()
				if fails {
					return true, nil, errors.New("the API server is unreachable")
				}
				return false, nil, nil
			})
			h.r.Set("web", "web", running)
			h.flush()
			h.r.mu.Lock()
			defer h.r.mu.Unlock()
			if len(h.r.entries) != 0 {
				t.Errorf("entries %v after a reset, want none", h.r.entries)
			}
		})
	}
}
