package conversionwebhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"metacel.dev/metacel/runtime/servingcert"
)

// deadline bounds every wait of these tests for a goroutine.
const deadline = 10 * time.Second

func keeper() *servingcert.Keeper {
	return servingcert.New(fake.NewClientset(), servingcert.Options{
		Namespace:   "metacel-system",
		SecretName:  "metacel-webhook-cert",
		DNSNames:    []string{"metacel-webhook.metacel-system.svc"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	})
}

// runKeeper runs k until the test ends, and waits until it holds a certificate.
func runKeeper(t *testing.T, k *servingcert.Keeper) {
	t.Helper()
	go func() { _ = k.Run(t.Context()) }()
	select {
	case <-k.Ready():
	case <-time.After(deadline):
		t.Fatalf("no certificate after %s", deadline)
	}
}

// serve serves the handler on 127.0.0.1 until stop is called (or the test ends), which returns
// what ServeListener returned.
func serve(t *testing.T, k *servingcert.Keeper) (addr string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ServeListener(ctx, ln, k, NewHandler(lookup, nil)) }()
	stop = sync.OnceValue(func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(deadline):
			t.Errorf("ServeListener did not return %s after its context ended", deadline)
			return nil
		}
	})
	t.Cleanup(func() { _ = stop() })
	return ln.Addr().String(), stop
}

// trusting returns an HTTPS client that trusts the PEM CAs of bundle alone.
func trusting(t *testing.T, bundle []byte) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		t.Fatal("the bundle holds no certificate")
	}
	return &http.Client{
		Timeout:   deadline,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}},
	}
}

func TestServeConvertsOverHTTPS(t *testing.T) {
	k := keeper()
	runKeeper(t, k)
	addr, stop := serve(t, k)
	client := trusting(t, k.CABundle())

	tests := []struct {
		name       string
		path       string
		wantStatus int
	}{
		{"a review at the conversion path is answered", Path, http.StatusOK},
		{"another path is not found", "/other", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client.Post("https://"+addr+tt.path, "application/json", bytes.NewReader(review(v1, myApp(v1alpha1, "a", "2"))))
			if err != nil {
				t.Fatalf("POST: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantStatus == http.StatusOK {
				checkConverted(t, decodeResponse(t, body), v1, []runtime.RawExtension{myApp(v1alpha1, "a", "2")}, []string{`{"replicas":2}`})
			}
		})
	}
	if err := stop(); err != nil {
		t.Errorf("ServeListener after its context ended: %v", err)
	}
	if _, err := client.Post("https://"+addr+Path, "application/json", bytes.NewReader(review(v1))); err == nil {
		t.Errorf("the server still answers once stopped")
	}
}

func TestAServerStartedBeforeItsCertificateServesOnceItIsHeld(t *testing.T) {
	k := keeper()
	addr, _ := serve(t, k)
	runKeeper(t, k)
	resp, err := trusting(t, k.CABundle()).Post("https://"+addr+Path, "application/json", bytes.NewReader(review(v1)))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d, want 200", resp.StatusCode)
	}
}

func TestServeWithNoCertificateReturnsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Serve(ctx, "127.0.0.1:0", keeper(), NewHandler(lookup, nil)); err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}
