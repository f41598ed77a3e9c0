package servingcert

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// FieldManager is the field manager of every write of the Secret.
const FieldManager = "metacel"

const (
	// DefaultCAValidity and DefaultCertValidity are the lives of the CA and of the serving
	// certificate when Options leaves them zero.
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultCertValidity = 365 * 24 * time.Hour

	// maxWait bounds a wait for the next renewal, so that a clock that jumped (a machine
	// suspended) is noticed within it.
	maxWait = time.Hour
	// afterConflict is how soon the Secret is looked at again once another replica wrote it
	// first: its watch event normally comes sooner.
	afterConflict = time.Second
	// minBackoff and maxBackoff bound the wait before a failed read or write is tried again.
	minBackoff = time.Second
	maxBackoff = time.Minute
)

// Options say where the certificate is kept and whom it names.
type Options struct {
	// Namespace and SecretName name the Secret (kubernetes.io/tls) every replica shares.
	Namespace, SecretName string
	// DNSNames and IPAddresses are the serving certificate's names: the Service's DNS names, a
	// loopback address. At least one is required.
	DNSNames    []string
	IPAddresses []net.IP
	// CAValidity and CertValidity are the lives of the CA and of the serving certificate
	// (DefaultCAValidity, DefaultCertValidity when zero). A serving certificate never outlives
	// the CA that signed it.
	CAValidity, CertValidity time.Duration
	// Now is the clock (time.Now when nil); tests set it.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.CAValidity == 0 {
		o.CAValidity = DefaultCAValidity
	}
	if o.CertValidity == 0 {
		o.CertValidity = DefaultCertValidity
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (o Options) validate() error {
	var errs []error
	if o.Namespace == "" || o.SecretName == "" {
		errs = append(errs, fmt.Errorf("the Secret's namespace and name are required, got %q and %q", o.Namespace, o.SecretName))
	}
	if len(o.DNSNames) == 0 && len(o.IPAddresses) == 0 {
		errs = append(errs, errors.New("the serving certificate needs at least one DNS name or IP address"))
	}
	if o.CAValidity < 0 || o.CertValidity < 0 {
		errs = append(errs, fmt.Errorf("validities must be positive, got CA %s and certificate %s", o.CAValidity, o.CertValidity))
	}
	return errors.Join(errs...)
}

// Keeper keeps a serving certificate and its CA in a Secret, and serves the certificate it holds.
// Its methods other than Run may be called before Run and from any goroutine.
type Keeper struct {
	client kubernetes.Interface
	opts   Options

	held      atomic.Pointer[held]
	ready     chan struct{}
	readyOnce sync.Once
	changes   chan struct{}
}

// held is what a Keeper serves: the serving certificate and the CA bundle it was read with.
type held struct {
	cert   *tls.Certificate
	bundle []byte
}

// New returns a Keeper of the Secret opts names; it holds nothing until Run has read or written
// the Secret.
func New(client kubernetes.Interface, opts Options) *Keeper {
	return &Keeper{
		client:  client,
		opts:    opts.withDefaults(),
		ready:   make(chan struct{}),
		changes: make(chan struct{}, 1),
	}
}

// GetCertificate returns the serving certificate held now, for tls.Config's GetCertificate: a
// server that uses it serves a renewed certificate without a restart.
func (k *Keeper) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	h := k.held.Load()
	if h == nil {
		return nil, errors.New("no serving certificate yet")
	}
	return h.cert, nil
}

// CABundle returns the PEM certificates of every CA a client must trust (nil before Ready): the
// caBundle of a CRD's conversion webhook.
func (k *Keeper) CABundle() []byte {
	h := k.held.Load()
	if h == nil {
		return nil
	}
	return bytes.Clone(h.bundle)
}

// Ready is closed once a serving certificate is held.
func (k *Keeper) Ready() <-chan struct{} {
	return k.ready
}

// Changes receives a value when the CA bundle changes, the first bundle held included; a change
// not yet received is not repeated (read CABundle when a value comes).
func (k *Keeper) Changes() <-chan struct{} {
	return k.changes
}

// Run keeps the Secret until ctx ends: it creates it when there is none, adopts what another
// replica wrote, and renews the serving certificate and the CA when they are due. It blocks, and
// returns an error only for Options it cannot work with; the API server's errors are logged and
// tried again.
func (k *Keeper) Run(ctx context.Context) error {
	if err := k.opts.validate(); err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	logger := klog.FromContext(ctx).WithValues("secret", klog.KRef(k.opts.Namespace, k.opts.SecretName))
	ctx = klog.NewContext(ctx, logger)
	w := k.watchSecret(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), w.synced) {
		return nil
	}
	w.drain()
	retry := minBackoff
	for {
		wait, err := k.syncLatest(ctx, w)
		if err != nil {
			logger.Error(err, "Keeping the serving certificate failed", "retryAfter", retry)
			wait, retry = retry, min(2*retry, maxBackoff)
		} else {
			retry = minBackoff
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-w.changed:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// syncLatest syncs the Secret as last seen, and returns how long to wait before the next sync.
func (k *Keeper) syncLatest(ctx context.Context, w *secretWatch) (time.Duration, error) {
	current, err := w.latest()
	if err != nil {
		return 0, err
	}
	next, err := k.sync(ctx, current)
	if err != nil {
		return 0, err
	}
	return min(max(next.Sub(k.opts.Now()), 0), maxWait), nil
}

// adopt holds m: its serving certificate is served from now on, and a changed bundle is told on
// Changes.
func (k *Keeper) adopt(ctx context.Context, m material) {
	h := &held{cert: m.cert, bundle: encodeCertificates(m.bundle...)}
	old := k.held.Swap(h)
	logger := klog.FromContext(ctx)
	if old == nil || old.cert.Leaf.SerialNumber.Cmp(h.cert.Leaf.SerialNumber) != 0 {
		logger.Info("Serving certificate held", "serial", h.cert.Leaf.SerialNumber.Text(16), "notAfter", h.cert.Leaf.NotAfter)
	}
	if old == nil || !bytes.Equal(old.bundle, h.bundle) {
		logger.Info("CA bundle changed", "cas", len(m.bundle))
		select {
		case k.changes <- struct{}{}:
		default:
		}
	}
	// after the change is told: once Ready, Changes holds the first bundle's value
	k.readyOnce.Do(func() { close(k.ready) })
}
