package conversionwebhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/servingcert"
)

// Path is the path the handler is served at: a CRD's conversion webhook's clientConfig names it.
const Path = "/convert"

const (
	// readHeaderTimeout bounds the time to read a request's headers.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout is how long a connection the API server keeps open waits for its next request.
	idleTimeout = 2 * time.Minute
	// shutdownTimeout bounds the wait for requests under way once ctx ends: less than a Pod's
	// default grace period (30s).
	shutdownTimeout = 10 * time.Second
)

// Serve serves h at Path over HTTPS on addr until ctx ends, with the serving certificate certs
// holds (a renewed one is served without a restart). It listens once certs is Ready; when ctx
// ends, it stops accepting and waits for the requests under way.
func Serve(ctx context.Context, addr string, certs *servingcert.Keeper, h http.Handler) error {
	select {
	case <-certs.Ready():
	case <-ctx.Done():
		return nil
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("conversion webhook: %w", err)
	}
	return ServeListener(ctx, ln, certs, h)
}

// ServeListener is Serve on a listener already open (tests listen on 127.0.0.1:0); it closes ln.
func ServeListener(ctx context.Context, ln net.Listener, certs *servingcert.Keeper, h http.Handler) error {
	select {
	case <-certs.Ready():
	case <-ctx.Done():
		return ln.Close()
	}
	logger := klog.FromContext(ctx)
	mux := http.NewServeMux()
	mux.Handle(Path, h)
	srv := &http.Server{
		Handler: mux,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: certs.GetCertificate,
		},
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		// requests keep ctx's values (its logger), not its end: Shutdown lets them finish
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:    log.New(serverLog{logger}, "", 0),
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	logger.Info("Serving the conversion webhook", "address", ln.Addr().String(), "path", Path)
	select {
	case err := <-served:
		return fmt.Errorf("conversion webhook at %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("conversion webhook at %s: shutting down: %w", ln.Addr(), err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("conversion webhook at %s: %w", ln.Addr(), err)
	}
	return nil
}

// serverLog writes the HTTP server's own messages (TLS handshakes refused, mostly probes and
// clients that do not trust the CA) to the logger, at verbosity 2.
type serverLog struct{ logger klog.Logger }

func (l serverLog) Write(p []byte) (int, error) {
	l.logger.V(2).Info("Conversion webhook server", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}
