package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/prometheus/client_golang/prometheus"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/conversion"
	"metacel.dev/metacel/runtime/conversionwebhook"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/servingcert"
	"metacel.dev/metacel/runtime/source"
)

// Webhook says where the runtime serves the conversion webhook of the CRDs of several versions it
// installs, and how the API server reaches it.
type Webhook struct {
	// Addr is the address the HTTPS server listens on, e.g. :9443.
	Addr string
	// ClientConfig is how the API server reaches it (a Service, or a URL): written, with the CA
	// bundle, into each CRD the runtime installs with more than one version.
	ClientConfig apiextensionsv1.WebhookClientConfig
	// Certificate says which Secret keeps the serving certificate and which names it is for.
	Certificate servingcert.Options
}

// conversionServer is the runtime's conversion webhook: the converters of the parents of the CRDs
// it installs, by group and kind, served over HTTPS with a certificate the runtime keeps. A
// converter is registered when its CRD is installed or found up to date, so that parents convert
// from the moment the API server may ask, and stays while the runtime runs: the CRD, which is
// never deleted, goes on naming this webhook. Every replica serves: a conversion is a pure
// function of the object.
type conversionServer struct {
	config     Webhook
	certs      *servingcert.Keeper
	metrics    *conversionwebhook.Metrics
	mu         sync.RWMutex
	converters map[schema.GroupKind]policyConverter
	// failed is each policy's last conversion that failed, reported in its status for a while
	failed map[string]conversionFailure
}

// policyConverter is a policy's converter, which records the conversions that fail.
type policyConverter struct {
	policy    string
	converter *conversion.Converter
	server    *conversionServer
}

// conversionFailure is a conversion that failed, and when.
type conversionFailure struct {
	err string
	at  time.Time
}

// conversionFailureShown is how long a failed conversion stays in its policy's status.
const conversionFailureShown = 10 * time.Minute

// Convert converts with the policy's converter, and records a failure.
func (c policyConverter) Convert(ctx context.Context, obj *unstructured.Unstructured, toVersion string) (*unstructured.Unstructured, error) {
	out, err := c.converter.Convert(ctx, obj, toVersion)
	if err != nil {
		c.server.mu.Lock()
		c.server.failed[c.policy] = conversionFailure{err: err.Error(), at: time.Now()}
		c.server.mu.Unlock()
	}
	return out, err
}

// lastFailure is the policy's last failed conversion, when it failed less than
// conversionFailureShown ago; "" when none did.
func (s *conversionServer) lastFailure(policy string) string {
	if s == nil {
		return ""
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.failed[policy]
	if !ok || time.Since(f.at) > conversionFailureShown {
		return ""
	}
	return "the conversion webhook refused a parent: " + f.err
}

// newConversionServer returns the webhook of config; nil when the runtime serves none.
func newConversionServer(config *Webhook, certs *servingcert.Keeper, metrics *conversionwebhook.Metrics) *conversionServer {
	if config == nil {
		return nil
	}
	return &conversionServer{config: *config, certs: certs, metrics: metrics,
		converters: map[schema.GroupKind]policyConverter{}, failed: map[string]conversionFailure{}}
}

// run serves the webhook and keeps its certificate until ctx ends.
func (s *conversionServer) run(ctx context.Context) error {
	if s == nil {
		return nil
	}
	errs := make(chan error, 2)
	go func() { errs <- s.certs.Run(ctx) }()
	go func() {
		errs <- conversionwebhook.Serve(ctx, s.config.Addr, s.certs, conversionwebhook.NewHandler(s.lookup, s.metrics))
	}()
	err := <-errs
	if ctx.Err() == nil && err != nil {
		return fmt.Errorf("conversion webhook: %w", err)
	}
	return nil
}

// lookup returns the converter of a group and kind.
func (s *conversionServer) lookup(gk schema.GroupKind) (conversionwebhook.Converter, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.converters[gk]
	return c, ok
}

// errNoWebhook refuses a CRD of several versions on a runtime that serves no conversion webhook.
var errNoWebhook = errors.New("the parent declares several versions (parentSchema.versions), which the API server converts through " +
	"the runtime's conversion webhook, and this runtime serves none: run it with --webhook-bind-address and --webhook-service " +
	"(or --webhook-url), as the shipped Deployment and Helm chart do")

// configure registers the converter of a policy's parent versions and has its CRD name the webhook
// with the current CA bundle; a CRD of one version needs neither.
func (s *conversionServer) configure(ctx context.Context, doc *policy.Document, crd *apiextensionsv1.CustomResourceDefinition) error {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return nil
	}
	if s == nil {
		return errNoWebhook
	}
	if err := s.register(ctx, doc); err != nil {
		return err
	}
	select {
	case <-s.certs.Ready():
	case <-ctx.Done():
		return fmt.Errorf("wait for the conversion webhook's certificate: %w", ctx.Err())
	}
	cc := s.config.ClientConfig.DeepCopy()
	cc.CABundle = s.certs.CABundle()
	crd.Spec.Conversion.Webhook.ClientConfig = cc
	return nil
}

// register compiles and registers the converter of a policy's parent versions.
func (s *conversionServer) register(ctx context.Context, doc *policy.Document) error {
	compiled, err := policy.CompileConversion(doc)
	if err != nil || compiled == nil {
		return err
	}
	converter, err := conversion.New(compiled)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.converters[converter.GroupKind()] = policyConverter{policy: doc.Policy.Metadata.Name, converter: converter, server: s}
	s.mu.Unlock()
	klog.FromContext(ctx).V(4).Info("Converting parents", "policy", doc.Policy.Metadata.Name, "kind", converter.GroupKind(), "versions", converter.Versions())
	return nil
}

// registerFromSources registers the converters of the policies the sources hold, on every replica:
// the leader registers them as it installs their CRDs (configure), but the API server sends its
// conversions to any replica, standbys included, which install nothing. A snapshot's policy that
// does not compile is left to the policy set to report.
func (s *conversionServer) registerFromSources(ctx context.Context, snapshots <-chan source.Snapshot) {
	for {
		select {
		case <-ctx.Done():
			return
		case snap := <-snapshots:
			for _, u := range snap.Units {
				for _, p := range parentCRDsOf(u) {
					if err := s.register(ctx, p.doc); err != nil {
						klog.FromContext(ctx).V(2).Info("No converter for the policy's parent versions", "policy", p.doc.Policy.Metadata.Name, "err", err)
					}
				}
			}
		}
	}
}

// startConversionWebhook starts serving the conversion webhook with o.Webhook, with a certificate
// kept in a Secret of the runtime's namespace (written without the fence: every replica serves,
// the leader or not), and the converters of the policies its own read of the policy sources finds;
// nil without o.Webhook. A failure of the server ends the run (errs).
func startConversionWebhook(ctx context.Context, o Options, c *clients, reg prometheus.Registerer, errs chan<- error) (*conversionServer, error) {
	if o.Webhook == nil {
		return nil, nil
	}
	kube, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return nil, fmt.Errorf("conversion webhook client: %w", err)
	}
	certs := o.Webhook.Certificate
	certs.Namespace = cmp.Or(certs.Namespace, o.Namespace, recordsNamespace(o))
	s := newConversionServer(o.Webhook, servingcert.New(kube, certs), conversionwebhook.NewMetrics(reg))
	go func() {
		if err := s.run(ctx); err != nil {
			errs <- err
		}
	}()
	snapshots, _ := startSources(ctx, o, c, errs)
	go s.registerFromSources(ctx, snapshots)
	return s, nil
}

// caChanged signals a new CA bundle of the webhook's certificate (its first included), which the
// CRDs that name the webhook must carry; nil, which never signals, without a webhook.
func (s *conversionServer) caChanged() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.certs.Changes()
}
