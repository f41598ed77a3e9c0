package servingcert

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// deadline bounds every wait of these tests for something the Keeper does on its own goroutine.
const deadline = 10 * time.Second

var secretsResource = schema.GroupResource{Resource: "secrets"}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func newKeeper(client *fake.Clientset, c *clock) *Keeper {
	o := options
	o.Now = c.Now
	return New(client, o)
}

// run runs k until the test ends, and waits until it holds a certificate.
func run(t *testing.T, k *Keeper) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-k.Ready():
	case err := <-done:
		t.Fatalf("Run returned before a certificate was held: %v", err)
	case <-time.After(deadline):
		t.Fatalf("no certificate held after %s", deadline)
	}
}

// eventually polls cond until it holds, failing the test at the deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(deadline); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not after %s", what, deadline)
		}
	}
}

func stored(t *testing.T, client *fake.Clientset) *corev1.Secret {
	t.Helper()
	s, err := client.CoreV1().Secrets(options.Namespace).Get(t.Context(), options.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the Secret: %v", err)
	}
	return s
}

// writes returns the verb and field manager of every create and update of Secrets.
func writes(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		switch a := a.(type) {
		case k8stesting.CreateActionImpl:
			out = append(out, "create by "+a.CreateOptions.FieldManager)
		case k8stesting.UpdateActionImpl:
			out = append(out, "update by "+a.UpdateOptions.FieldManager)
		}
	}
	return out
}

func serial(k *Keeper) string {
	c, err := k.GetCertificate(nil)
	if err != nil {
		return ""
	}
	return c.Leaf.SerialNumber.String()
}

func received(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// otherReplicasSecret is the Secret another replica would have written at now.
func otherReplicasSecret(t *testing.T, now time.Time) *corev1.Secret {
	t.Helper()
	m, _ := planned(t, options, material{}, now)
	data, err := m.data()
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: options.Namespace, Name: options.SecretName},
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}
}

func TestRunCreatesTheSecretOnce(t *testing.T) {
	client := fake.NewClientset()
	k := newKeeper(client, &clock{now: time.Now()})
	if _, err := k.GetCertificate(nil); err == nil {
		t.Errorf("a certificate is served before Run")
	}
	run(t, k)

	if got := writes(client); len(got) != 1 || got[0] != "create by metacel" {
		t.Errorf("writes = %q, want one create by metacel", got)
	}
	s := stored(t, client)
	if s.Type != corev1.SecretTypeTLS {
		t.Errorf("type = %q, want %q", s.Type, corev1.SecretTypeTLS)
	}
	for _, key := range []string{"tls.crt", "tls.key", "ca.crt", "ca.key"} {
		if len(s.Data[key]) == 0 {
			t.Errorf("the Secret has no %s", key)
		}
	}
	if string(k.CABundle()) != string(s.Data["ca.crt"]) {
		t.Errorf("CABundle() is not the Secret's ca.crt")
	}
	if !received(k.Changes()) {
		t.Errorf("the first bundle is not told on Changes")
	}
}

func TestASecondKeeperAdoptsTheFirstsSecret(t *testing.T) {
	client := fake.NewClientset()
	c := &clock{now: time.Now()}
	first := newKeeper(client, c)
	run(t, first)
	second := newKeeper(client, c)
	run(t, second)

	if got := writes(client); len(got) != 1 {
		t.Errorf("writes = %q, want the first keeper's create alone", got)
	}
	if serial(second) != serial(first) || string(second.CABundle()) != string(first.CABundle()) {
		t.Errorf("the second keeper holds other material than the first")
	}
}

func TestAnotherReplicasWriteIsAdoptedFromTheWatch(t *testing.T) {
	client := fake.NewClientset()
	c := &clock{now: time.Now()}
	k := newKeeper(client, c)
	run(t, k)
	<-k.Changes()
	before := serial(k)

	other := otherReplicasSecret(t, c.Now())
	if _, err := client.CoreV1().Secrets(options.Namespace).Update(t.Context(), other, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the other replica's certificate served", func() bool { return serial(k) != before })
	if string(k.CABundle()) != string(other.Data["ca.crt"]) {
		t.Errorf("the bundle held is not the other replica's")
	}
	eventually(t, "the bundle's change told", func() bool { return received(k.Changes()) })
}

func TestADeletedSecretIsCreatedAgain(t *testing.T) {
	client := fake.NewClientset()
	k := newKeeper(client, &clock{now: time.Now()})
	run(t, k)
	before := string(k.CABundle())
	if err := client.CoreV1().Secrets(options.Namespace).Delete(t.Context(), options.SecretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new CA held", func() bool { return string(k.CABundle()) != before })
	if got := string(stored(t, client).Data["ca.crt"]); got != string(k.CABundle()) {
		t.Errorf("the bundle held is not the one created again")
	}
}

// TestRotation walks the Secret through the lives of its certificates, one sync at each time.
func TestRotation(t *testing.T) {
	client := fake.NewClientset()
	c := &clock{now: t0}
	k := newKeeper(client, c)
	ctx := t.Context()
	sync := func(at time.Time) {
		t.Helper()
		c.set(at)
		var current *corev1.Secret
		if s, err := client.CoreV1().Secrets(options.Namespace).Get(ctx, options.SecretName, metav1.GetOptions{}); err == nil {
			current = s
		}
		if _, err := k.sync(ctx, current); err != nil {
			t.Fatalf("sync at %s: %v", at, err)
		}
	}
	sync(t0)
	firstCA := parse(stored(t, client).Data).ca
	<-k.Changes()

	steps := []struct {
		name       string
		at         time.Time
		newSerial  bool
		bundle     int
		newBundle  bool
		signedByCA bool // the serving certificate is signed by the CA that signs, not by the one replaced
	}{
		{"a fresh certificate is kept", t0.Add(day), false, 1, false, true},
		{"the serving certificate is renewed past 2/3 of its life, the bundle unchanged", t0.Add(19*day + 12*time.Hour), true, 1, false, true},
		{"the CA is replaced past 2/3 of its life, the bundle holding both", t0.Add(20*day + 12*time.Hour), false, 2, true, false},
		{"the next serving certificate is signed by the new CA", t0.Add(22 * day), true, 2, false, true},
		{"the replaced CA leaves the bundle once expired (the serving certificate expired too)", t0.Add(30 * day), true, 1, true, true},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			before := serial(k)
			sync(step.at)
			m := parse(stored(t, client).Data)
			if got := serial(k) != before; got != step.newSerial {
				t.Errorf("serving certificate renewed = %v, want %v", got, step.newSerial)
			}
			if serial(k) != m.cert.Leaf.SerialNumber.String() || string(k.CABundle()) != string(encodeCertificates(m.bundle...)) {
				t.Errorf("the keeper holds other material than the Secret")
			}
			if len(m.bundle) != step.bundle {
				t.Errorf("bundle holds %d CAs, want %d", len(m.bundle), step.bundle)
			}
			if got := received(k.Changes()); got != step.newBundle {
				t.Errorf("bundle change told = %v, want %v", got, step.newBundle)
			}
			if got := m.cert.Leaf.CheckSignatureFrom(m.ca) == nil; got != step.signedByCA {
				t.Errorf("signed by the CA that signs = %v, want %v", got, step.signedByCA)
			}
			if step.bundle == 2 && !m.bundle[1].Equal(firstCA) {
				t.Errorf("the bundle's second CA is not the one replaced")
			}
		})
	}
}

func TestAWriteThatLosesToAnotherReplicaAdoptsItsSecret(t *testing.T) {
	tests := []struct {
		name string
		// existing is the Secret the keeper reads first (nil: none, so it creates)
		existing func(t *testing.T) *corev1.Secret
		verb     string
		lost     func(name string) error
		at       time.Time
	}{
		{
			name: "a create refused as AlreadyExists", verb: "create", at: t0,
			lost: func(name string) error { return apierrors.NewAlreadyExists(secretsResource, name) },
		},
		{
			name: "an update refused as a Conflict", verb: "update", at: t0.Add(2 * day),
			existing: func(t *testing.T) *corev1.Secret { return otherReplicasSecret(t, t0) },
			lost: func(name string) error {
				return apierrors.NewConflict(secretsResource, name, errors.New("the object has been modified"))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			var current *corev1.Secret
			if tt.existing != nil {
				current = tt.existing(t)
				if err := client.Tracker().Add(current); err != nil {
					t.Fatal(err)
				}
			}
			winner := otherReplicasSecret(t, tt.at)
			client.PrependReactor(tt.verb, "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
				// the other replica writes first
				if err := client.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, options.Namespace, options.SecretName); err != nil && !apierrors.IsNotFound(err) {
					return true, nil, err
				}
				if err := client.Tracker().Add(winner); err != nil {
					return true, nil, err
				}
				return true, nil, tt.lost(options.SecretName)
			})
			k := newKeeper(client, &clock{now: tt.at})
			if _, err := k.sync(t.Context(), current); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if string(k.CABundle()) != string(winner.Data["ca.crt"]) {
				t.Errorf("the keeper does not hold the winner's bundle")
			}
			if got := stored(t, client).Data["tls.crt"]; string(got) != string(winner.Data["tls.crt"]) {
				t.Errorf("the winner's Secret was overwritten")
			}
		})
	}
}

func TestTheServedCertificateVerifiesWithTheBundle(t *testing.T) {
	client := fake.NewClientset()
	k := newKeeper(client, &clock{now: time.Now()})
	run(t, k)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Listener = tls.NewListener(srv.Listener, &tls.Config{GetCertificate: k.GetCertificate, MinVersion: tls.VersionTLS12})
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused, as they should be
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	tests := []struct {
		name       string
		serverName string // "" verifies the IP address
		trust      []byte
		wantErr    bool
	}{
		{"by its DNS name", "metacel-webhook.metacel-system.svc", k.CABundle(), false},
		{"by its IP address", "", k.CABundle(), false},
		{"not by another name", "metacel-webhook.default.svc", k.CABundle(), true},
		{"not by another CA", "metacel-webhook.metacel-system.svc", otherReplicasSecret(t, time.Now()).Data["ca.crt"], true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(tt.trust) {
				t.Fatal("the bundle holds no certificate")
			}
			conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", port), &tls.Config{RootCAs: roots, ServerName: tt.serverName, MinVersion: tls.VersionTLS12})
			if err == nil {
				_ = conn.Close()
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("handshake error = %v, want an error %v", err, tt.wantErr)
			}
		})
	}
}

func TestRunRefusesOptionsItCannotWorkWith(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"no Secret name", Options{Namespace: "ns", DNSNames: []string{"a"}}},
		{"no name for the certificate", Options{Namespace: "ns", SecretName: "s"}},
		{"a negative validity", Options{Namespace: "ns", SecretName: "s", DNSNames: []string{"a"}, CertValidity: -time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := New(fake.NewClientset(), tt.opts).Run(t.Context()); err == nil {
				t.Errorf("Run accepted %+v", tt.opts)
			}
		})
	}
}
