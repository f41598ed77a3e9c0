package identity

import (
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/rest"
)

// ServiceAccount is the ServiceAccount a policy acts as.
type ServiceAccount struct {
	Namespace, Name string
}

// UserName is the ServiceAccount's user name: system:serviceaccount:<namespace>:<name>.
func (sa ServiceAccount) UserName() string { return serviceaccount.MakeUsername(sa.Namespace, sa.Name) }

// Groups are the groups the API server puts a ServiceAccount's requests in.
func (sa ServiceAccount) Groups() []string {
	return append(serviceaccount.MakeGroupNames(sa.Namespace), "system:authenticated")
}

func (sa ServiceAccount) String() string { return sa.Namespace + "/" + sa.Name }

// Config is base impersonating the ServiceAccount: the API server then authorizes and admits the
// requests as the ServiceAccount's (it adds the ServiceAccount's groups itself). Everything else
// of base is kept: its rate limiter (one client-side limit for the process), its wrappers (a
// write fence).
func Config(base *rest.Config, sa ServiceAccount) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: sa.UserName()}
	return cfg
}
