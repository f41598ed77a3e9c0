package servingcert

import (
	"crypto/x509"
	"net"
	"slices"
	"testing"
	"time"
)

var (
	t0      = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	day     = 24 * time.Hour
	options = Options{
		Namespace:    "metacel-system",
		SecretName:   "metacel-webhook-cert",
		DNSNames:     []string{"metacel-webhook.metacel-system.svc"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		CAValidity:   30 * day,
		CertValidity: 3 * day,
	}.withDefaults()
)

// planned returns the material plan makes at now from have, failing the test on an error.
func planned(t *testing.T, o Options, have material, now time.Time) (material, []string) {
	t.Helper()
	m, why, err := o.plan(have, now)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return m, why
}

func TestPlan(t *testing.T) {
	first, _ := planned(t, options, material{}, t0)
	// the serving certificate renewed at 19.5 days, then the CA replaced at 20.5 (past 2/3 of 30)
	renewed, _ := planned(t, options, first, t0.Add(19*day+12*time.Hour))
	replaced, _ := planned(t, options, renewed, t0.Add(20*day+12*time.Hour))
	otherNames := options
	otherNames.DNSNames = append(slices.Clone(options.DNSNames), "metacel-webhook.metacel-system.svc.cluster.local")
	foreign, _ := planned(t, options, material{}, t0)
	signedElsewhere := first
	signedElsewhere.cert = foreign.cert

	tests := []struct {
		name        string
		opts        Options
		have        material
		now         time.Time
		wantWhy     []string
		newCA       bool
		newCert     bool
		wantBundled []*x509.Certificate
	}{
		{
			name: "nothing held: a new CA and serving certificate", opts: options, have: material{}, now: t0,
			wantWhy: []string{"no CA whose key is held", "no serving certificate"}, newCA: true, newCert: true,
		},
		{
			name: "fresh material is kept", opts: options, have: first, now: t0.Add(time.Hour),
			wantBundled: first.bundle,
		},
		{
			name: "a serving certificate past 2/3 of its life is renewed by the same CA", opts: options, have: first, now: t0.Add(2 * day),
			wantWhy: []string{"the serving certificate is past 2/3 of its life"}, newCert: true, wantBundled: first.bundle,
		},
		{
			name: "other names renew the serving certificate", opts: otherNames, have: first, now: t0.Add(time.Hour),
			wantWhy: []string{"the serving certificate is for other names"}, newCert: true, wantBundled: first.bundle,
		},
		{
			name: "a serving certificate signed by no CA of the bundle is renewed", opts: options, have: signedElsewhere, now: t0.Add(time.Hour),
			wantWhy: []string{"the serving certificate is signed by no CA of the bundle"}, newCert: true, wantBundled: first.bundle,
		},
		{
			name: "a CA past 2/3 of its life is replaced, the bundle holding both, the serving certificate kept", opts: options, have: renewed, now: t0.Add(20*day + 12*time.Hour),
			wantWhy: []string{"the CA is past 2/3 of its life"}, newCA: true, wantBundled: first.bundle,
		},
		{
			name: "a replaced CA leaves the bundle once expired", opts: options, have: replaced, now: t0.Add(30 * day),
			wantWhy: []string{"a CA of the bundle expired", "the serving certificate is signed by no CA of the bundle"}, newCert: true, wantBundled: replaced.bundle[:1],
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := planned(t, tt.opts, tt.have, tt.now)
			if !slices.Equal(why, tt.wantWhy) {
				t.Errorf("reasons = %q, want %q", why, tt.wantWhy)
			}
			if isNew := got.ca != tt.have.ca; isNew != tt.newCA {
				t.Errorf("new CA = %v, want %v", isNew, tt.newCA)
			}
			if isNew := got.cert != tt.have.cert; isNew != tt.newCert {
				t.Errorf("new serving certificate = %v, want %v", isNew, tt.newCert)
			}
			wantBundle := tt.wantBundled
			if tt.newCA {
				wantBundle = append([]*x509.Certificate{got.ca}, wantBundle...)
			}
			if !slices.Equal(got.bundle, wantBundle) {
				t.Errorf("bundle = %v, want %v", subjects(got.bundle), subjects(wantBundle))
			}
			if !got.usable(tt.now) {
				t.Errorf("the planned material cannot serve at %s", tt.now)
			}
			if tt.newCert && got.cert.Leaf.CheckSignatureFrom(got.ca) != nil {
				t.Errorf("the renewed serving certificate is not signed by the CA that signs")
			}
		})
	}
}

func subjects(certs []*x509.Certificate) []string {
	var s []string
	for _, c := range certs {
		s = append(s, c.Subject.CommonName)
	}
	return s
}

func TestAServingCertificateNeverOutlivesItsCA(t *testing.T) {
	long := options
	long.CertValidity = 100 * day
	m, _ := planned(t, long, material{}, t0)
	if !m.cert.Leaf.NotAfter.Equal(m.ca.NotAfter) {
		t.Errorf("serving certificate expires %s, its CA %s", m.cert.Leaf.NotAfter, m.ca.NotAfter)
	}
}

func TestTheSecretsDataParsesBackToTheSameMaterial(t *testing.T) {
	m, _ := planned(t, options, material{}, t0)
	data, err := m.data()
	if err != nil {
		t.Fatal(err)
	}
	got := parse(data)
	if got.ca == nil || !got.ca.Equal(m.ca) || !got.caKey.Equal(m.caKey) || !got.cert.Leaf.Equal(m.cert.Leaf) {
		t.Errorf("parse(data()) = %+v, want %+v", got, m)
	}
	if _, why := planned(t, options, got, t0.Add(time.Hour)); len(why) > 0 {
		t.Errorf("the material read back is renewed: %q", why)
	}
}

func TestNextIsTheEarliestRenewalOrExpiry(t *testing.T) {
	o := options
	o.CertValidity = 9 * day
	first, _ := planned(t, o, material{}, t0)
	renewed, _ := planned(t, o, first, t0.Add(19*day))
	replaced, _ := planned(t, o, renewed, t0.Add(21*day))
	signedByTheNewCA, _ := planned(t, o, replaced, t0.Add(26*day))
	tests := []struct {
		name string
		m    material
		want time.Time
	}{
		{"the serving certificate's 2/3", first, renewAt(first.cert.Leaf)},
		{"the replaced CA's expiry", signedByTheNewCA, first.ca.NotAfter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.next(); !got.Equal(tt.want) {
				t.Errorf("next = %s, want %s", got, tt.want)
			}
		})
	}
}
