//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// What impersonation costs (-impersonate). Users run a policy that names a ServiceAccount
// (spec.serviceAccountName): the runtime then writes through clients that impersonate it, and asks
// a SubjectAccessReview of it before each read it makes for the policy (answers kept a minute),
// and once its own user name (a SelfSubjectReview). The bench's configurations run the policy as
// the runtime itself (--allow-policies-without-service-account), as the hand-written controller
// acts as itself; each configuration's impersonated twin runs the same metacel with the policy
// acting as its ServiceAccount, and the impersonation table sets the two side by side.

// impersonatedSuffix ends the name of a configuration's impersonated twin.
const impersonatedSuffix = "-impersonated"

// withImpersonatedTwins is configs, each followed by its impersonated twin: in every repetition
// the twin's metacel runs right after its configuration's.
func withImpersonatedTwins(configs []benchConfig) []benchConfig {
	out := make([]benchConfig, 0, 2*len(configs))
	for _, c := range configs {
		out = append(out, c, c.impersonatedTwin())
	}
	return out
}

// impersonatedTwin is c with metacel's policy acting as its ServiceAccount; it shares c's
// baseline run (the baseline does not change).
func (c benchConfig) impersonatedTwin() benchConfig {
	t := c
	t.name, t.twinOf, t.impersonate, t.handFrom = c.name+impersonatedSuffix, c.name, true, c.name
	t.desc = c.desc + "; metacel's policy acting as its ServiceAccount (spec.serviceAccountName, impersonated; the RBAC `metacel rbac` prints for it), metacel run without --allow-policies-without-service-account"
	return t
}

// policySpec is the policy's spec: the one line "spec:" at the start of a line.
var policySpec = regexp.MustCompile(`(?m)^spec:\n`)

// namesServiceAccount finds a serviceAccountName in a policy.
var namesServiceAccount = regexp.MustCompile(`(?m)^\s+serviceAccountName:`)

// withServiceAccount is a policy whose spec names the ServiceAccount sa (the policy names none).
func withServiceAccount(policy []byte, sa string) ([]byte, error) {
	if len(policySpec.FindAll(policy, -1)) != 1 {
		return nil, errors.New("want exactly one spec: at the start of a line, the policy's own")
	}
	if namesServiceAccount.Match(policy) {
		return nil, errors.New("the policy names a serviceAccountName already")
	}
	return policySpec.ReplaceAllLiteral(policy, []byte("spec:\n  serviceAccountName: "+sa+"\n")), nil
}

// policyActingAs is the policy file at path with its spec naming the ServiceAccount sa.
func policyActingAs(path, sa string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out, err := withServiceAccount(raw, sa)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// grantPolicy creates in the cluster what `metacel rbac` prints for the policy file, as users
// apply it (its ServiceAccount, the ServiceAccount's ClusterRole and binding, the ClusterRole of
// the runtime's reads), and waits until the API server's authorizer grants the ServiceAccount
// every rule of its role; it returns the ServiceAccount, namespace/name. The bench's client
// sends all of it, before the controller starts.
func (b *bench) grantPolicy(ctx context.Context, cl *cluster, policy string) (string, error) {
	cmd := exec.CommandContext(ctx, b.o.metacelBin, "rbac", "--namespace", policyNamespace, policy)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("metacel rbac %q: %w: %s", policy, err, stderr.String())
	}
	objs, err := parseManifests(out)
	if err != nil {
		return "", fmt.Errorf("metacel rbac %q: %w", policy, err)
	}
	sa, checks, err := grantedTo(objs)
	if err != nil {
		return "", fmt.Errorf("metacel rbac %q: %w", policy, err)
	}
	if err := cl.createAll(ctx, objs); err != nil {
		return "", err
	}
	if err := cl.waitGranted(ctx, sa, checks, time.Minute); err != nil {
		return "", err
	}
	return sa.String(), nil
}

// parseManifests reads a YAML stream of objects; documents of comments alone are skipped.
func parseManifests(raw []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, fmt.Errorf("a document of the stream: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("a document of the stream has no kind or name: %v", u.Object)
		}
		objs = append(objs, u)
	}
}

// serviceAccountRef is a ServiceAccount by namespace and name.
type serviceAccountRef struct{ namespace, name string }

func (s serviceAccountRef) String() string { return s.namespace + "/" + s.name }

func (s serviceAccountRef) user() string {
	return "system:serviceaccount:" + s.namespace + ":" + s.name
}

// access is one thing a ServiceAccount may do: a verb on a resource of a group, anywhere.
type access struct{ verb, group, resource string }

// grantedTo reads from manifests the one ServiceAccount they create, and what the ClusterRoles
// bound to it grant: every verb on every resource of every rule (a resource's subresource as
// "resource/subresource").
func grantedTo(objs []*unstructured.Unstructured) (serviceAccountRef, []access, error) {
	var sas []serviceAccountRef
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			sas = append(sas, serviceAccountRef{o.GetNamespace(), o.GetName()})
		}
	}
	if len(sas) != 1 {
		return serviceAccountRef{}, nil, fmt.Errorf("want one ServiceAccount, got %d", len(sas))
	}
	sa := sas[0]
	roles := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" {
			roles[o.GetName()] = o
		}
	}
	var checks []access
	for _, o := range objs {
		if o.GetKind() != "ClusterRoleBinding" || !bindsServiceAccount(o, sa) {
			continue
		}
		ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
		role, ok := roles[ref]
		if !ok {
			return sa, nil, fmt.Errorf("ClusterRoleBinding %q: its ClusterRole %q is not among the manifests", o.GetName(), ref)
		}
		checks = append(checks, rulesOf(role)...)
	}
	if len(checks) == 0 {
		return sa, nil, fmt.Errorf("nothing granted to ServiceAccount %s", sa)
	}
	return sa, checks, nil
}

// bindsServiceAccount says whether a binding's subjects name sa.
func bindsServiceAccount(binding *unstructured.Unstructured, sa serviceAccountRef) bool {
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	for _, s := range subjects {
		m, _ := s.(map[string]any)
		if m["kind"] == "ServiceAccount" && m["name"] == sa.name && m["namespace"] == sa.namespace {
			return true
		}
	}
	return false
}

// rulesOf is every verb on every resource of a role's rules.
func rulesOf(role *unstructured.Unstructured) []access {
	var out []access
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		m, _ := r.(map[string]any)
		strs := func(key string) []string {
			s, _, _ := unstructured.NestedStringSlice(m, key)
			return s
		}
		for _, g := range strs("apiGroups") {
			for _, res := range strs("resources") {
				for _, v := range strs("verbs") {
					out = append(out, access{verb: v, group: g, resource: res})
				}
			}
		}
	}
	return out
}

// createAll creates objs, each at the resource discovery maps its kind to.
func (c *cluster) createAll(ctx context.Context, objs []*unstructured.Unstructured) error {
	groups, err := restmapper.GetAPIGroupResources(c.kube.Discovery())
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %q: %w", gvk.Kind, o.GetName(), err)
		}
		var r dynamic.ResourceInterface = c.dynamic.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			r = c.dynamic.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := r.Create(ctx, o, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s %q: %w", gvk.Kind, o.GetName(), err)
		}
	}
	return nil
}

// errNotAllowed is a SubjectAccessReview's answer that does not allow.
var errNotAllowed = errors.New("not allowed")

// waitGranted polls SubjectAccessReviews of sa until the API server's authorizer (its informers
// of roles and bindings) allows every one of checks, for at most timeout.
func (c *cluster) waitGranted(ctx context.Context, sa serviceAccountRef, checks []access, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, a := range checks {
		resource, subresource, _ := strings.Cut(a.resource, "/")
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   sa.user(),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: a.verb, Group: a.group, Resource: resource, Subresource: subresource, Namespace: benchNamespace,
			},
		}}
		for {
			got, err := c.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err == nil && got.Status.Allowed {
				break
			}
			if time.Now().After(deadline) {
				if err == nil {
					err = errNotAllowed
				}
				return fmt.Errorf("ServiceAccount %s not granted %s %s after %s: %w", sa, a.verb, a.resource, timeout, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// reviewsLine lists a run's access reviews by window: start-up, converge, idle, restarts.
func (r *result) reviewsLine() string {
	parts := make([]string, 0, 4)
	for _, w := range []struct {
		name string
		c    counts
	}{{"start-up", r.startup}, {"converge", r.converged}, {"idle", r.idle}, {"restarts", r.restarted}} {
		parts = append(parts, w.name+": "+w.c.summary(accessReviews, 10))
	}
	return strings.Join(parts, "; ")
}

// impersonationTable sets, for each impersonated twin among configs, its metacel beside the
// metacel of its configuration (the policy acting as the runtime): the converge, the requests with
// the access reviews of each window, the control plane's CPU and metacel's, the restart, and the
// load client's burst (the same work in both: how fast the machine was); the
// twin's with its ratio to the other's, and with two runs or more the median of each
// repetition's ratio (the two run one after the other).
func impersonationTable(configs []benchConfig, results map[string][]*result) string {
	var rows, paired []string
	for _, c := range configs {
		if c.twinOf == "" {
			continue
		}
		self, acting := results[metacel+"/"+c.twinOf], results[metacel+"/"+c.name]
		ms, ma := medians(self), medians(acting)
		if ms == nil || ma == nil {
			continue
		}
		rows = append(rows, impersonationRow(c.twinOf, "the runtime (--allow-policies-without-service-account)", ms, nil),
			impersonationRow(c.name, "its ServiceAccount "+ma.actsAs, ma, ms))
		if len(self) >= 2 && len(self) == len(acting) {
			paired = append(paired, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |", c.name,
				pairedRatio(acting, self, func(r *result) float64 { return r.converge.Seconds() }),
				pairedRatio(acting, self, func(r *result) float64 { return r.converged.total(work) }),
				pairedRatio(acting, self, func(r *result) float64 { return r.serverCPU }),
				pairedRatio(acting, self, func(r *result) float64 { return r.cpu }),
				pairedRatio(acting, self, func(r *result) float64 { return r.restart.Seconds() }),
				pairedRatio(acting, self, func(r *result) float64 { return r.created.Seconds() })))
		}
	}
	if len(rows) == 0 {
		return ""
	}
	t := "\nImpersonation: metacel with its policy acting as the runtime, and the same metacel (the configuration's twin, run next) with the policy acting as its ServiceAccount: every write impersonates it, every read for the policy is first checked with a SubjectAccessReview (answers kept a minute). Access reviews are counted among the requests (POSTs that write nothing), by window:\n\n" +
		"| configuration | metacel's policy acts as | converge s | quiet s | requests | access reviews | requests by verb and resource | control plane CPU s | CPU s | RSS MB | restart s | restart requests | the load client's burst s (the machine's speed) |\n" +
		"|---|---|--:|--:|--:|---|---|--:|--:|--:|--:|--:|--:|\n" + strings.Join(rows, "\n") + "\n"
	if len(paired) > 0 {
		t += "\nImpersonation, paired: each impersonated run against the run of its configuration in the same repetition, the median and (sorted) every run's:\n\n" +
			"| configuration | converge | requests | control plane CPU | CPU | restart | the load client's burst (the machine's speed) |\n|---|---|---|---|---|---|---|\n" + strings.Join(paired, "\n") + "\n"
	}
	return t
}

// impersonationRow is one row of impersonationTable; base (nil: none) is the row its figures are
// divided by.
func impersonationRow(config, actsAs string, m, base *result) string {
	ratio := func(f func(*result) float64, format string) string {
		s := fmt.Sprintf(format, f(m))
		if base != nil {
			switch b := f(base); {
			case b > 0:
				s += fmt.Sprintf(" (×%.2f)", f(m)/b)
			case f(m) > 0:
				s += " (×∞)"
			}
		}
		return s
	}
	return "| " + strings.Join([]string{config, actsAs,
		ratio(func(r *result) float64 { return r.converge.Seconds() }, "%.1f"),
		ratio(func(r *result) float64 { return r.settled.Seconds() }, "%.1f"),
		ratio(func(r *result) float64 { return r.converged.total(work) }, "%.0f"),
		m.reviewsLine(),
		m.converged.summary(work, 12),
		ratio(func(r *result) float64 { return r.serverCPU }, "%.1f"),
		ratio(func(r *result) float64 { return r.cpu }, "%.1f"),
		ratio(func(r *result) float64 { return r.rss }, "%.0f"),
		ratio(func(r *result) float64 { return r.restart.Seconds() }, "%.2f"),
		ratio(func(r *result) float64 { return r.restarted.total(requests) }, "%.0f"),
		ratio(func(r *result) float64 { return r.created.Seconds() }, "%.1f"),
	}, " | ") + " |"
}
