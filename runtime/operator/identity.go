package operator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"metacel.dev/metacel/runtime/apply"
	"metacel.dev/metacel/runtime/compact"
	"metacel.dev/metacel/runtime/controller"
	"metacel.dev/metacel/runtime/identity"
	"metacel.dev/metacel/runtime/policy"
)

// identities give each policy the identity it acts as (package identity): the ServiceAccount it
// names, in the namespace of the runtime's policies; one set of clients per ServiceAccount.
type identities struct {
	// namespace holds the policies' ServiceAccounts
	namespace string
	// base is the runtime's client configuration (its rate limiter, its write fence)
	base     *rest.Config
	reviewer *identity.Reviewer
	// runtime is the runtime's own writer, for the policies without a ServiceAccount when allowed
	runtime *apply.Writer
	// allowRuntime lets policies without a ServiceAccount act as the runtime
	allowRuntime bool
	// self is the runtime's own user name, "" when not known (whoAmI); asked for when a policy
	// first names a ServiceAccount, so that a runtime whose policies name none asks nothing
	self func() string

	mu      sync.Mutex
	writers map[identity.ServiceAccount]*apply.Writer
}

// check refuses a policy that names no ServiceAccount, unless the runtime allows it, and one that
// names the runtime's own: acting as it would be acting as the runtime.
func (ids *identities) check(p *policy.Compiled) error {
	return ids.checkNamed(p.Name(), p.ServiceAccountName())
}

// checkNamed is check of the policy named policyName acting as the ServiceAccount named name.
func (ids *identities) checkNamed(policyName, name string) error {
	if name != "" {
		if sa := (identity.ServiceAccount{Namespace: ids.namespace, Name: name}); sa.UserName() == ids.self() {
			return fmt.Errorf("policy %q: spec.serviceAccountName: %q is the runtime's own ServiceAccount: a policy acting as it "+
				"would have the runtime's permissions. Name a ServiceAccount of its own (metacel rbac prints its RBAC)", policyName, name)
		}
		return nil
	}
	if ids.allowRuntime {
		return nil
	}
	return fmt.Errorf("policy %q: spec.serviceAccountName: is required: the policy would act as the runtime, "+
		"whose permissions span every resource of every policy in every namespace. Name a ServiceAccount of namespace %q "+
		"that may do what the policy does (metacel rbac prints its role and binding), or run the runtime with "+
		"--allow-policies-without-service-account (whoever may write a policy is then cluster-admin-equivalent)",
		policyName, ids.namespace)
}

// forPolicy is the identity p acts as.
func (ids *identities) forPolicy(p *policy.Compiled) (controller.Identity, error) {
	if p.ServiceAccountName() == "" {
		return controller.Identity{Writer: ids.runtime}, ids.check(p)
	}
	sa := identity.ServiceAccount{Namespace: ids.namespace, Name: p.ServiceAccountName()}
	w, err := ids.writer(sa)
	if err != nil {
		return controller.Identity{}, err
	}
	return controller.Identity{Writer: w, ServiceAccount: sa, Reviewer: ids.reviewer}, nil
}

// writerNamed is the writer of the policy named policyName acting as the ServiceAccount named
// name ("": the runtime, where allowed); an error when it may not act as it.
func (ids *identities) writerNamed(policyName, name string) (*apply.Writer, error) {
	if err := ids.checkNamed(policyName, name); err != nil {
		return nil, err
	}
	if name == "" {
		return ids.runtime, nil
	}
	return ids.writer(identity.ServiceAccount{Namespace: ids.namespace, Name: name})
}

// writer is the writer that impersonates sa, made on first use.
func (ids *identities) writer(sa identity.ServiceAccount) (*apply.Writer, error) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if w, ok := ids.writers[sa]; ok {
		return w, nil
	}
	cfg := identity.Config(ids.base, sa)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client acting as %q: %w", sa.String(), err)
	}
	raw, err := apply.NewRawClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("client acting as %q: %w", sa.String(), err)
	}
	w := apply.NewWriter(dyn).WithRawClient(raw, compact.Responses{})
	ids.writers[sa] = w
	return w, nil
}

// whoAmI is the runtime's own user name: the subject of its ServiceAccount token when it runs with
// one (in a Pod: no request), else as the API server authenticates it (a SelfSubjectReview); ""
// when it cannot say (the policies are then not checked against it: the API server still refuses
// the runtime's impersonation of an account not granted to it).
func whoAmI(ctx context.Context, cfg *rest.Config, kube kubernetes.Interface) string {
	if sub := tokenSubject(cfg); sub != "" {
		return sub
	}
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		klog.FromContext(ctx).Info("Could not learn the runtime's own identity: a policy naming the runtime's ServiceAccount is not refused", "err", err)
		return ""
	}
	return review.Status.UserInfo.Username
}

// tokenSubject is the subject of the ServiceAccount token cfg authenticates with, "" when it has
// none: the token's own claim, which the API server authenticates as that user.
func tokenSubject(cfg *rest.Config) string {
	token := cfg.BearerToken
	if token == "" && cfg.BearerTokenFile != "" {
		b, err := os.ReadFile(cfg.BearerTokenFile)
		if err != nil {
			return ""
		}
		token = strings.TrimSpace(string(b))
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if json.Unmarshal(payload, &claims) != nil || !strings.HasPrefix(claims.Sub, "system:serviceaccount:") {
		return ""
	}
	return claims.Sub
}
