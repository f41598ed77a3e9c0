package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilptr "k8s.io/utils/ptr"

	"metacel.dev/metacel/runtime/operator"
	"metacel.dev/metacel/runtime/parentcrd"
	"metacel.dev/metacel/runtime/servingcert"
)

// webhookFlags say where the runtime serves the conversion webhook of the parents' versions.
type webhookFlags struct {
	addr, service, url, secret string
}

func (w *webhookFlags) add(f *pflag.FlagSet) {
	f.StringVar(&w.addr, "webhook-bind-address", "0", `address of the HTTPS conversion webhook that converts parents between the versions a parentSchema declares, e.g. :9443 ("0": none; a policy whose parent has several versions then does not install its CRD)`)
	f.StringVar(&w.service, "webhook-service", "", "the Service the API server reaches the conversion webhook through, as namespace/name[:port] (default: the runtime's namespace/metacel-webhook:443)")
	f.StringVar(&w.url, "webhook-url", "", "the URL the API server reaches the conversion webhook at instead of a Service, for a runtime outside the cluster, e.g. https://127.0.0.1:9443/convert")
	f.StringVar(&w.secret, "webhook-secret", "metacel-webhook-tls", "the Secret, in the runtime's namespace, that keeps the conversion webhook's serving certificate and its CA (created and rotated by the runtime, shared by its replicas)")
}

// options returns the operator's Webhook of the flags; nil when none is served.
func (w *webhookFlags) options(namespace string) (*operator.Webhook, error) {
	if w.addr == "0" || w.addr == "" {
		return nil, nil
	}
	out := &operator.Webhook{Addr: w.addr, Certificate: servingcert.Options{Namespace: namespace, SecretName: w.secret}}
	if w.url != "" {
		return out, w.withURL(out)
	}
	if namespace == "" && !strings.Contains(w.service, "/") {
		return nil, errors.New("--webhook-service needs a namespace (namespace/name), or give --runtime-namespace")
	}
	svc, err := parseService(w.service, namespace)
	if err != nil {
		return nil, err
	}
	out.ClientConfig.Service = svc
	host := svc.Name + "." + svc.Namespace + ".svc"
	out.Certificate.DNSNames = []string{host, host + ".cluster.local"}
	return out, nil
}

// withURL has the API server reach the webhook at --webhook-url, with a certificate for its host.
func (w *webhookFlags) withURL(out *operator.Webhook) error {
	u, err := url.Parse(w.url)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("--webhook-url must be an https URL with a host, e.g. https://127.0.0.1:9443%s, got %q", parentcrd.WebhookPath, w.url)
	}
	out.ClientConfig.URL = utilptr.To(w.url)
	if ip := net.ParseIP(u.Hostname()); ip != nil {
		out.Certificate.IPAddresses = []net.IP{ip}
	} else {
		out.Certificate.DNSNames = []string{u.Hostname()}
	}
	return nil
}

// parseService reads namespace/name[:port] (default: namespace/metacel-webhook:443).
func parseService(s, namespace string) (*apiextensionsv1.ServiceReference, error) {
	ref := parentcrd.DefaultWebhookService.DeepCopy()
	ref.Namespace = namespace
	if s == "" {
		return ref, nil
	}
	rest := s
	if ns, name, ok := strings.Cut(s, "/"); ok {
		ref.Namespace, rest = ns, name
	}
	name, port, hasPort := strings.Cut(rest, ":")
	ref.Name = name
	if hasPort {
		var p int32
		if _, err := fmt.Sscanf(port, "%d", &p); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("--webhook-service: the port %q is not a port number", port)
		}
		ref.Port = utilptr.To(p)
	}
	if ref.Namespace == "" || ref.Name == "" {
		return nil, fmt.Errorf("--webhook-service must be namespace/name[:port], got %q", s)
	}
	return ref, nil
}
