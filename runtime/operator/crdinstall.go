package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/clusterread"
	"metacel.dev/metacel/runtime/contract"
	"metacel.dev/metacel/runtime/conversion"
	"metacel.dev/metacel/runtime/crdinstall"
	"metacel.dev/metacel/runtime/policy"
	"metacel.dev/metacel/runtime/source"
	"metacel.dev/metacel/runtime/storagemigration"
)

// crdInstaller installs the parents' CRDs of the policies that ask for it
// (spec.parentSchema.install), as package crdinstall decides: it reads as the runtime and writes
// as the policy. It is a type of its own, apart from the policy set, because installing a CRD is
// a conversation with the API server about one document (the CRD there, the parents it stores,
// the identity that may write it) that knows nothing of the set but which policies run and which
// install the same CRD (crdClaims: of those, one may write it, crdInstaller.owner); the set
// decides what a unit does with the result (policySet.installParentCRDsOf) and when to try again
// (policySet.retryInstalls).
type crdInstaller struct {
	// client lists the stored parents, as the runtime
	client dynamic.Interface
	// runtime reads the CRDs, as the runtime (the runtime's writer)
	runtime *apply.Writer
	// writer is the writer of a policy acting as its ServiceAccount, an error when it may not
	writer func(policy, serviceAccount string) (*apply.Writer, error)
	// runs reports whether a policy of that name runs (policySet.runs): a CRD installed for a
	// policy that runs is that policy's (crdinstall.Decide)
	runs func(policy string) bool
	// conversion is the runtime's conversion webhook, which a CRD of several versions names
	conversion *conversionServer
	// migrations rewrite stored parents when a CRD's storage version has changed
	migrations migrations
	// discovery says whether the cluster serves StorageVersionMigrations; nil: never asked
	discovery storagemigration.ResourceDiscovery
}

// migrateIfNeeded starts the migration of a CRD, installed as the policy declares, whose parents
// are stored at another version than its storage version too, as the policy's identity.
func (in *crdInstaller) migrateIfNeeded(ctx context.Context, doc *policy.Document, existing *unstructured.Unstructured) error {
	if !storagemigration.NeedsMigration(existing) {
		return nil
	}
	w, err := in.writer(doc.Policy.Metadata.Name, doc.Policy.Spec.ServiceAccountName)
	if err != nil {
		return err
	}
	in.migrations.start(ctx, existing.GetName(), w.Client(), in.discovery)
	return nil
}

// maxNamedBreaks bounds the parents a refused change names.
const maxNamedBreaks = 5

// installRetry bounds the wait before a unit whose CRD could not be installed is loaded again:
// the CRD, the parents or the ServiceAccount's permissions may have changed since.
const (
	installRetryFirst = 5 * time.Second
	installRetryMax   = 5 * time.Minute
)

// installResult is what installing a unit's CRDs gave: the CRDs written now, which the unit's
// policies wait for until the API server serves them as written; an error when one may not or
// could not be written.
type installResult struct {
	written []string
	err     error
}

// parentCRD is the CRD a policy installs (spec.parentSchema.install).
type parentCRD struct {
	doc *policy.Document
	crd *apiextensionsv1.CustomResourceDefinition
}

// parentCRDsOf returns the CRDs the unit's policies install. Documents that do not parse or
// validate install none: they are left to compile, which reports them.
func parentCRDsOf(u source.Unit) []parentCRD {
	if u.Problem != "" {
		return nil
	}
	docs, err := policy.Parse(u.Name, u.Data)
	if err != nil {
		return nil
	}
	var out []parentCRD
	for _, doc := range docs {
		ps := doc.Policy.Spec.ParentSchema
		if ps == nil || !ps.Install || policy.Validate(doc) != nil {
			continue
		}
		if crd, err := policy.ParentCRD(doc); err == nil {
			out = append(out, parentCRD{doc: doc, crd: crd})
		}
	}
	return out
}

// crdClaims are, by CRD name, the policies of the sources that install it, in the runtime's load
// order: of those, one may write it (crdInstaller.owner). They are gathered from every unit the
// sources hold, on first use, so that a policy loading now knows of those that load after it.
type crdClaims struct {
	units  []source.Unit // sorted by name
	byName map[string][]string
}

// of names the policies that install the CRD.
func (c *crdClaims) of(crd string) []string {
	if c == nil {
		return nil
	}
	if c.byName == nil {
		c.byName = map[string][]string{}
		for _, u := range c.units {
			for _, p := range parentCRDsOf(u) {
				c.byName[p.crd.Name] = append(c.byName[p.crd.Name], p.doc.Policy.Metadata.Name)
			}
		}
	}
	return c.byName[crd]
}

// installParentCRDs makes the CRDs of the unit's installing policies what their parentSchema
// declares, each CRD by the one policy of claims that may write it; a nil installer installs none.
func (in *crdInstaller) installParentCRDs(ctx context.Context, u source.Unit, claims *crdClaims) installResult {
	if in == nil {
		return installResult{}
	}
	var out installResult
	var errs []error
	for _, p := range parentCRDsOf(u) {
		wrote, err := in.installParentCRD(ctx, p.doc, p.crd, claims.of(p.crd.Name))
		if err != nil {
			errs = append(errs, fmt.Errorf("policy %q: spec.parentSchema.install: %w", p.doc.Policy.Metadata.Name, err))
		}
		if wrote {
			out.written = append(out.written, p.crd.Name)
		}
	}
	out.err = errors.Join(errs...)
	return out
}

// installParentCRD creates or updates one policy's CRD when the policy owns it among claimants
// (the policies that install it) and crdinstall says so; it reports whether it wrote it.
func (in *crdInstaller) installParentCRD(ctx context.Context, doc *policy.Document, crd *apiextensionsv1.CustomResourceDefinition, claimants []string) (bool, error) {
	name := doc.Policy.Metadata.Name
	existing, err := in.observedCRD(ctx, crd.Name)
	if err != nil {
		return false, err
	}
	if owner, why := in.owner(claimants, existing); owner != "" && owner != name {
		return false, fmt.Errorf("the CRD %q belongs to policy %q, %s: one parent resource has one policy; remove parentSchema.install from one of them", crd.Name, owner, why)
	}
	converter, err := in.conversion.prepare(ctx, doc, crd)
	if err != nil {
		return false, err
	}
	desired, err := desiredCRD(doc, crd)
	if err != nil {
		return false, err
	}
	decision := crdinstall.Decide(existing, desired, in.runs)
	switch decision.Action {
	case crdinstall.Leave:
		in.conversion.serve(ctx, name, converter)
		return false, in.migrateIfNeeded(ctx, doc, existing)
	case crdinstall.Refuse:
		return false, errors.New(decision.Why)
	case crdinstall.Update:
		// a change of the webhook's address or CA bundle alone changes nothing a parent holds, and
		// the parents are not listed through the webhook it repairs, which may be what is broken
		if doc.Policy.Metadata.Annotations[contract.AnnotationAllowBreakingSchemaChange] != "true" && !crdinstall.SameDeclaration(existing, desired) {
			if err := in.checkStoredParents(ctx, existing, crd, converter); err != nil {
				return false, err
			}
		}
	}
	if err := in.apply(ctx, doc, desired, converter, decision.Action); err != nil {
		return false, err
	}
	klog.FromContext(ctx).Info("Installed the parent's CRD", "policy", name, "crd", crd.Name, "action", decision.Action)
	return true, nil
}

// desiredCRD is the CRD a policy declares as the runtime applies it (crdinstall.Desired), with the
// policy's declaration, which it carries when its parents convert through the webhook.
func desiredCRD(doc *policy.Document, crd *apiextensionsv1.CustomResourceDefinition) (*unstructured.Unstructured, error) {
	declaration, err := policy.ParentDeclaration(doc)
	if err != nil {
		return nil, err
	}
	return crdinstall.Desired(crd, doc.Policy.Metadata.Name, declaration)
}

// apply writes the CRD a policy declares, as the policy's identity, with the converter of its
// declaration serving from just before: the API server may convert its parents as soon as it holds
// it. When the write fails, the converter that served before serves again, since the CRD in the
// cluster is the one it converts.
func (in *crdInstaller) apply(ctx context.Context, doc *policy.Document, desired *unstructured.Unstructured, converter *conversion.Converter, action crdinstall.Action) error {
	w, err := in.writer(doc.Policy.Metadata.Name, doc.Policy.Spec.ServiceAccountName)
	if err != nil {
		return err
	}
	undo := in.conversion.serve(ctx, doc.Policy.Metadata.Name, converter)
	if _, err := w.Apply(ctx, crdGVR, desired, nil); err != nil {
		undo()
		return fmt.Errorf("%s the CRD %q: %w", strings.ToLower(string(action)), desired.GetName(), err)
	}
	return nil
}

// owner says which of the claimants of a CRD (the policies that install it, their units sorted by
// name) may write it, and why: the one that runs; else the one the CRD's installed-by label names;
// else the first; none when there are no claimants. Every claimant comes to the same answer from
// what the API server holds, before any of them writes: a restart, where none runs yet, leaves
// the CRD to the policy that installed it, and the others never apply it.
func (in *crdInstaller) owner(claimants []string, existing *unstructured.Unstructured) (owner, why string) {
	if len(claimants) == 0 {
		return "", ""
	}
	for _, c := range claimants {
		if in.runs(c) {
			return c, "which runs"
		}
	}
	if existing != nil {
		if by := existing.GetLabels()[contract.LabelInstalledBy]; slices.Contains(claimants, by) {
			return by, "which installed it (its label " + contract.LabelInstalledBy + ")"
		}
	}
	return claimants[0], "whose unit's name sorts first"
}

// observedCRD reads a CRD from the API server; nil when there is none.
func (in *crdInstaller) observedCRD(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	obj, err := in.runtime.Get(ctx, crdGVR, "", name)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read the CRD %q: %w", name, err)
	}
	return obj, nil
}

// checkStoredParents refuses a new CRD that a stored parent would not survive, naming them: at
// each version both CRDs serve, the parents as the API server serves them there against the new
// schema of that version; at each version only the new CRD serves, the parents converted to it
// with the new declaration's converter; and a version parents are still stored at that the new
// CRD would no longer serve.
func (in *crdInstaller) checkStoredParents(ctx context.Context, existing *unstructured.Unstructured, crd *apiextensionsv1.CustomResourceDefinition, converter *conversion.Converter) error {
	if dropped := crdinstall.StoredVersionsDropped(existing, crd); len(dropped) > 0 {
		return errors.New(crdinstall.DroppedVersionsMessage(crd.Name, dropped))
	}
	var listed []map[string]any // the parents at the first version both CRDs serve
	for _, v := range crd.Spec.Versions {
		if !servesVersion(existing, v.Name) {
			continue // not served before: checkNewVersions
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural}
		parents, err := in.listParents(ctx, gvr)
		if err != nil {
			return fmt.Errorf("list the stored parents (%s) to check the change: %w", resourceName(gvr), err)
		}
		breaks, total, err := crdinstall.Breaks(v.Schema.OpenAPIV3Schema, parents, maxNamedBreaks)
		if err != nil {
			return err
		}
		if total > 0 {
			return errors.New(crdinstall.BreakingMessage(crd.Name, breaks, total))
		}
		if listed == nil {
			listed = parents
		}
	}
	return checkNewVersions(ctx, existing, crd, converter, listed)
}

// checkNewVersions refuses a new CRD with a version the existing one does not serve that a stored
// parent does not convert to, naming them: once the CRD is applied, every list at that version
// would fail on them. parents are the stored parents at a version both serve.
func checkNewVersions(ctx context.Context, existing *unstructured.Unstructured, crd *apiextensionsv1.CustomResourceDefinition, converter *conversion.Converter, parents []map[string]any) error {
	if converter == nil {
		return nil // one version: the API server only changes the apiVersion
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served || servesVersion(existing, v.Name) {
			continue
		}
		to := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}.String()
		if breaks, total := conversionBreaks(ctx, converter, parents, to); total > 0 {
			return errors.New(crdinstall.BreakingMessage(crd.Name, breaks, total))
		}
	}
	return nil
}

// conversionBreaks converts each parent to toAPIVersion and returns the first maxNamedBreaks that
// do not convert, and how many do not.
func conversionBreaks(ctx context.Context, converter *conversion.Converter, parents []map[string]any, toAPIVersion string) ([]crdinstall.Break, int) {
	var out []crdinstall.Break
	n := 0
	for _, p := range parents {
		obj := &unstructured.Unstructured{Object: p}
		if _, err := converter.Convert(ctx, obj, toAPIVersion); err != nil {
			n++
			if len(out) < maxNamedBreaks {
				out = append(out, crdinstall.Break{Parent: parentName(obj), Problems: []string{"does not convert to " + toAPIVersion + ": " + err.Error()}})
			}
		}
	}
	return out, n
}

// parentName is namespace/name of a parent, or its name when cluster-scoped.
func parentName(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// servesVersion reports whether the existing CRD serves a version.
func servesVersion(existing *unstructured.Unstructured, version string) bool {
	versions, _, _ := unstructured.NestedSlice(existing.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); served && m["name"] == version {
			return true
		}
	}
	return false
}

// listParents lists a resource's objects in every namespace, a page at a time (clusterread.List).
func (in *crdInstaller) listParents(ctx context.Context, gvr schema.GroupVersionResource) ([]map[string]any, error) {
	items, err := clusterread.List(ctx, in.client, gvr, "", "")
	out := make([]map[string]any, len(items))
	for i, u := range items {
		out[i] = u.Object
	}
	return out, err
}

// installRetryAfter is the wait before the next attempt after n failed ones in a row.
func installRetryAfter(n int) time.Duration {
	d := installRetryFirst
	for range n - 1 {
		if d *= 2; d >= installRetryMax {
			return installRetryMax
		}
	}
	return d
}

// retryInstalls loads again the units whose CRDs could not be installed, once their wait is over;
// it reports whether it did.
func (s *policySet) retryInstalls() bool {
	now := s.clock.Now()
	due := func(st *unitState) bool { return !st.installRetryAt.IsZero() && !now.Before(st.installRetryAt) }
	for _, st := range s.units {
		if due(st) {
			s.reconcile(due, nil)
			return true
		}
	}
	return false
}

// reinstallParentCRDs loads again the units that install CRDs, so that each CRD of several
// versions carries the webhook's current CA bundle (crdinstall finds the others up to date).
func (s *policySet) reinstallParentCRDs() {
	s.reconcile(func(st *unitState) bool { return len(parentCRDsOf(st.unit)) > 0 }, nil)
}
