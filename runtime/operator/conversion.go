package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/prometheus/client_golang/prometheus"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/contract"

	"metacel.dev/metacel/runtime/conversion"
	"metacel.dev/metacel/runtime/conversionwebhook"
	"metacel.dev/metacel/runtime/crdinstall"
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
// it installs, by group and kind, served over HTTPS with a certificate the runtime keeps. Every
// replica serves: a conversion is a pure function of the object.
//
// A CRD's parents convert with the converter of the declaration the CRD in the cluster holds, never
// of one the runtime has not written (a version of the policy whose change was refused). The
// sources offer a converter per policy that installs the CRD (offer); the one whose declaration the
// CRD's hash annotation says it holds serves (crdDeclares, from a watch of the CRDs), as does the
// one the leader finds up to date or writes (serve). When the sources offer none of it any more (a
// change refused, or the policy removed, and the runtime started since), the converter of the
// declaration the CRD carries serves (carriedBy): what the CRD holds converts from the CRD. Until
// then the converter that served goes on serving; a converter stays while the runtime runs, as
// the CRD, which is never deleted, goes on naming this webhook.
type conversionServer struct {
	config     Webhook
	certs      *servingcert.Keeper
	metrics    *conversionwebhook.Metrics
	mu         sync.RWMutex
	converters map[schema.GroupKind]policyConverter
	// offered is, by CRD name then policy, the converter each policy that installs the CRD declares
	// last in the sources: of those, the one whose declaration the CRD holds serves
	offered map[string]map[string]offeredConverter
	// declared is, by CRD name, the hash annotation of the CRD in the cluster
	declared map[string]string
	// carried is, by CRD name, the converter of the declaration the CRD carries
	carried map[string]carriedConverter
	// failed is each policy's last conversion that failed, reported in its status for a while
	failed map[string]conversionFailure
}

// offeredConverter is the converter of a policy's parents that a source declares, and its CRD as
// the runtime would write it (crdinstall.Desired, with the webhook's client config), which the
// CRD's hash annotation is compared with (crdinstall.HoldsDeclaration).
type offeredConverter struct {
	policy    string
	converter *conversion.Converter
	desired   *unstructured.Unstructured
}

// carriedConverter is the converter of the declaration a CRD carries
// (contract.AnnotationParentDeclaration), compiled once for the CRD's hash annotation and that
// declaration; ok when it compiles and is the declaration the hash says the CRD holds.
type carriedConverter struct {
	hash, declaration string
	offer             offeredConverter
	ok                bool
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
		converters: map[schema.GroupKind]policyConverter{}, failed: map[string]conversionFailure{},
		offered: map[string]map[string]offeredConverter{}, declared: map[string]string{}, carried: map[string]carriedConverter{}}
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

// prepare has a policy's CRD name the webhook with the current CA bundle and returns the converter
// of its parent versions, which serves once the CRD holds them (serve); a CRD of one version needs
// neither (nil).
func (s *conversionServer) prepare(ctx context.Context, doc *policy.Document, crd *apiextensionsv1.CustomResourceDefinition) (*conversion.Converter, error) {
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return nil, nil
	}
	if s == nil {
		return nil, errNoWebhook
	}
	converter, err := converterOf(doc)
	if err != nil {
		return nil, err
	}
	select {
	case <-s.certs.Ready():
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the conversion webhook's certificate: %w", ctx.Err())
	}
	cc := s.config.ClientConfig.DeepCopy()
	cc.CABundle = s.certs.CABundle()
	crd.Spec.Conversion.Webhook.ClientConfig = cc
	return converter, nil
}

// converterOf compiles the converter of a policy's parent versions; nil when it declares one.
func converterOf(doc *policy.Document) (*conversion.Converter, error) {
	compiled, err := policy.CompileConversion(doc)
	if err != nil || compiled == nil {
		return nil, err
	}
	return conversion.New(compiled)
}

// serve has the converter convert the parents of its kind, for the named policy, and returns what
// puts back the converter that served before; a nil converter changes nothing.
func (s *conversionServer) serve(ctx context.Context, policy string, converter *conversion.Converter) (undo func()) {
	if s == nil || converter == nil {
		return func() {}
	}
	gk := converter.GroupKind()
	s.mu.Lock()
	before, had := s.converters[gk]
	s.converters[gk] = policyConverter{policy: policy, converter: converter, server: s}
	s.mu.Unlock()
	klog.FromContext(ctx).V(4).Info("Converting parents", "policy", policy, "kind", gk, "versions", converter.Versions())
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if had {
			s.converters[gk] = before
		} else {
			delete(s.converters, gk)
		}
	}
}

// offer records the converter a policy's source declares for the parents of a CRD, beside those of
// the other policies that install it, and serves it when the CRD in the cluster holds its
// declaration.
func (s *conversionServer) offer(ctx context.Context, crd string, o offeredConverter) {
	s.mu.Lock()
	if s.offered[crd] == nil {
		s.offered[crd] = map[string]offeredConverter{}
	}
	s.offered[crd][o.policy] = o
	hash, known := s.declared[crd]
	s.mu.Unlock()
	if known && crdinstall.HoldsDeclaration(hash, o.desired) {
		s.serve(ctx, o.policy, o.converter)
	}
}

// crdDeclares records the hash annotation of a CRD in the cluster, from its annotations, and serves
// the converter of the policy whose declaration it holds, of those the sources offer for it. At
// most one holds it: a declaration names its policy (the installed-by label), so whichever offer
// came last, or the CRD's event first, the same one serves. When none does, the converter of the
// declaration the CRD carries serves, if it is the one the CRD holds.
func (s *conversionServer) crdDeclares(ctx context.Context, crd string, annotations map[string]string) {
	hash := annotations[contract.AnnotationParentSchemaHash]
	s.mu.Lock()
	s.declared[crd] = hash
	offers := maps.Clone(s.offered[crd])
	s.mu.Unlock()
	for _, o := range offers {
		if crdinstall.HoldsDeclaration(hash, o.desired) {
			s.serve(ctx, o.policy, o.converter)
			return
		}
	}
	if o, ok := s.carriedBy(ctx, crd, hash, annotations[contract.AnnotationParentDeclaration]); ok {
		s.serve(ctx, o.policy, o.converter)
	}
}

// carriedBy returns the converter of the declaration a CRD carries, when it is the one the CRD's
// hash annotation says it holds; it is compiled when either changes, not at each of the CRD's
// events. The CRD is trusted as its conversion webhook is: whoever may write it may name another.
func (s *conversionServer) carriedBy(ctx context.Context, crd, hash, declaration string) (offeredConverter, bool) {
	if declaration == "" {
		return offeredConverter{}, false
	}
	s.mu.RLock()
	c, known := s.carried[crd]
	s.mu.RUnlock()
	if !known || c.hash != hash || c.declaration != declaration {
		o, err := carriedConverterOf(crd, hash, declaration)
		if err != nil {
			klog.FromContext(ctx).Error(err, "The CRD's parents do not convert with the declaration it carries", "crd", crd)
		}
		c = carriedConverter{hash: hash, declaration: declaration, offer: o, ok: err == nil}
		s.mu.Lock()
		s.carried[crd] = c
		s.mu.Unlock()
	}
	return c.offer, c.ok
}

// carriedConverterOf compiles the converter of the declaration a CRD carries, checked to be the
// one the CRD holds (hash, its hash annotation).
func carriedConverterOf(crd, hash, declaration string) (offeredConverter, error) {
	doc, err := policy.ReadParentDeclaration("CRD "+crd+", annotation "+contract.AnnotationParentDeclaration, []byte(declaration))
	if err != nil {
		return offeredConverter{}, err
	}
	declared, err := policy.ParentCRD(doc)
	if err != nil {
		return offeredConverter{}, err
	}
	converter, err := converterOf(doc)
	if err != nil {
		return offeredConverter{}, err
	}
	desired, err := crdinstall.Desired(declared, doc.Policy.Metadata.Name, nil)
	switch {
	case err != nil:
		return offeredConverter{}, err
	case converter == nil:
		return offeredConverter{}, fmt.Errorf("the declaration it carries (policy %q) declares one version, which needs no conversion", doc.Policy.Metadata.Name)
	case declared.Name != crd || !crdinstall.HoldsDeclaration(hash, desired):
		return offeredConverter{}, fmt.Errorf("the declaration it carries (policy %q) is not the one its annotation %s says it holds",
			doc.Policy.Metadata.Name, contract.AnnotationParentSchemaHash)
	}
	return offeredConverter{policy: doc.Policy.Metadata.Name, converter: converter, desired: desired}, nil
}

// offerFromSources offers the converters of the policies the sources hold, on every replica: the
// leader serves them as it installs their CRDs, but the API server sends its conversions to any
// replica, standbys included, which install nothing. A snapshot's policy that does not compile is
// left to the policy set to report.
func (s *conversionServer) offerFromSources(ctx context.Context, snapshots <-chan source.Snapshot) {
	for {
		select {
		case <-ctx.Done():
			return
		case snap := <-snapshots:
			for _, u := range snap.Units {
				for _, p := range parentCRDsOf(u) {
					s.offerPolicy(ctx, p)
				}
			}
		}
	}
}

// offerPolicy offers the converter of a policy that installs its CRD, with the CRD as the leader
// writes it: the webhook's client config and the CA bundle included, which a CRD an earlier runtime
// annotated is told by (crdinstall.HoldsDeclaration).
func (s *conversionServer) offerPolicy(ctx context.Context, p parentCRD) {
	name := p.doc.Policy.Metadata.Name
	crd := p.crd.DeepCopy()
	converter, err := s.prepare(ctx, p.doc, crd)
	if err == nil && converter != nil {
		var desired *unstructured.Unstructured
		if desired, err = desiredCRD(p.doc, crd); err == nil {
			s.offer(ctx, crd.Name, offeredConverter{policy: name, converter: converter, desired: desired})
		}
	}
	if err != nil {
		klog.FromContext(ctx).V(2).Info("No converter for the policy's parent versions", "policy", name, "err", err)
	}
}

// watchDeclarations tells s the annotations of each CRD the runtime installed, as the cluster holds
// them, until ctx ends: their metadata, watched.
func (s *conversionServer) watchDeclarations(ctx context.Context, client metadata.Interface) {
	inf := metadatainformer.NewFilteredMetadataInformer(client, crdGVR, "", 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.LabelSelector = contract.LabelInstalledBy
	}).Informer()
	declares := func(obj any) {
		if m, err := meta.Accessor(obj); err == nil {
			s.crdDeclares(ctx, m.GetName(), m.GetAnnotations())
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: declares, UpdateFunc: func(_, obj any) { declares(obj) }})
	inf.RunWithContext(ctx)
}

// startConversionWebhook starts serving the conversion webhook with o.Webhook, with a certificate
// kept in a Secret of the runtime's namespace (written without the fence: every replica serves,
// the leader or not), and the converters of the policies its own read of the policy sources finds;
// nil without o.Webhook. The CRDs' hash annotations are watched, so that each converter serves
// once its CRD holds its declaration. A failure of the server ends the run (errs).
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
	metadataClient, err := metadata.NewForConfig(o.Config)
	if err != nil {
		return nil, fmt.Errorf("conversion webhook client: %w", err)
	}
	snapshots, _ := startSources(ctx, o, c, errs)
	go s.offerFromSources(ctx, snapshots)
	go s.watchDeclarations(ctx, metadataClient)
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
