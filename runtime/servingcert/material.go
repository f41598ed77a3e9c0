package servingcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The keys of the Secret: a kubernetes.io/tls Secret's two, the CA bundle under the name a
// ServiceAccount token Secret gives it, and the key of the CA that signs.
const (
	keyCert     = corev1.TLSCertKey
	keyKey      = corev1.TLSPrivateKeyKey
	keyCABundle = corev1.ServiceAccountRootCAKey
	keyCAKey    = "ca.key"
)

// backdate is how far before now a certificate starts being valid: clocks of the replicas and of
// the API server differ by a little.
const backdate = 5 * time.Minute

// material is what the Secret holds, parsed. What is missing or does not parse is nil.
type material struct {
	// ca is the CA that signs, the certificate of caKey; it is in bundle.
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	// bundle is every CA a client trusts: ca first, then the CAs it replaced, until they expire.
	bundle []*x509.Certificate
	// cert is the serving certificate, its Leaf set.
	cert *tls.Certificate
}

// usable says whether the material can serve at now: a serving certificate in its validity,
// signed by a CA of the bundle.
func (m material) usable(now time.Time) bool {
	return m.cert != nil && now.Before(m.cert.Leaf.NotAfter) && signedByOneOf(m.cert.Leaf, m.bundle)
}

// parse reads the material data holds; a part that is missing or does not parse is left nil.
func parse(data map[string][]byte) material {
	var m material
	m.bundle = parseCertificates(data[keyCABundle])
	if key, err := parseECKey(data[keyCAKey]); err == nil {
		m.caKey = key
		m.ca = certificateOf(m.bundle, key)
	}
	if pair, err := tls.X509KeyPair(data[keyCert], data[keyKey]); err == nil {
		m.cert = &pair
	}
	return m
}

// parseCertificates returns the certificates of the PEM blocks in b that parse.
func parseCertificates(b []byte) []*x509.Certificate {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return certs
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			certs = append(certs, c)
		}
	}
}

func parseECKey(b []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("a %T, not an ECDSA key", key)
	}
	return ec, nil
}

// certificateOf returns the CA certificate of certs whose public key is key's; nil if none.
func certificateOf(certs []*x509.Certificate, key *ecdsa.PrivateKey) *x509.Certificate {
	for _, c := range certs {
		if pub, ok := c.PublicKey.(*ecdsa.PublicKey); ok && c.IsCA && pub.Equal(&key.PublicKey) {
			return c
		}
	}
	return nil
}

// data is the Secret's content that holds m.
func (m material) data() (map[string][]byte, error) {
	key, err := encodeKey(m.cert.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("encoding the serving key: %w", err)
	}
	caKey, err := encodeKey(m.caKey)
	if err != nil {
		return nil, fmt.Errorf("encoding the CA key: %w", err)
	}
	return map[string][]byte{
		keyCert:     encodeCertificates(m.cert.Leaf),
		keyKey:      key,
		keyCABundle: encodeCertificates(m.bundle...),
		keyCAKey:    caKey,
	}, nil
}

func encodeCertificates(certs ...*x509.Certificate) []byte {
	var b []byte
	for _, c := range certs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return b
}

func encodeKey(key any) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// renewAt is when a certificate is renewed: once 2/3 of its life has passed.
func renewAt(c *x509.Certificate) time.Time {
	return c.NotBefore.Add(c.NotAfter.Sub(c.NotBefore) * 2 / 3)
}

// plan returns the material the Secret should hold at now, and why it differs from have (no
// reason: have is kept as it is). A CA past 2/3 of its life is replaced, the one it replaces
// staying in the bundle until it expires; a serving certificate is renewed, by the CA that signs,
// when it is past 2/3 of its life, signed by no CA of the bundle, or for other names than opts'.
func (o Options) plan(have material, now time.Time) (material, []string, error) {
	want := have
	var why []string
	want.bundle = unexpired(have.bundle, now)
	if len(want.bundle) < len(have.bundle) {
		why = append(why, "a CA of the bundle expired")
	}
	if reason := caReason(have, now); reason != "" {
		ca, key, err := newCA(now, o.CAValidity)
		if err != nil {
			return material{}, nil, err
		}
		want.ca, want.caKey = ca, key
		want.bundle = append([]*x509.Certificate{ca}, want.bundle...)
		why = append(why, reason)
	}
	if reason := o.servingReason(have.cert, want.bundle, now); reason != "" {
		cert, err := o.newServing(want.ca, want.caKey, now)
		if err != nil {
			return material{}, nil, err
		}
		want.cert = cert
		why = append(why, reason)
	}
	return want, why, nil
}

// caReason says why the CA that signs must be replaced; "" when it need not.
func caReason(have material, now time.Time) string {
	switch {
	case have.ca == nil:
		return "no CA whose key is held"
	case !now.Before(renewAt(have.ca)):
		return "the CA is past 2/3 of its life"
	}
	return ""
}

// servingReason says why the serving certificate must be renewed; "" when it need not.
func (o Options) servingReason(cert *tls.Certificate, bundle []*x509.Certificate, now time.Time) string {
	switch {
	case cert == nil:
		return "no serving certificate"
	case !signedByOneOf(cert.Leaf, bundle):
		return "the serving certificate is signed by no CA of the bundle"
	case !now.Before(renewAt(cert.Leaf)):
		return "the serving certificate is past 2/3 of its life"
	case !slices.Equal(sortedNames(cert.Leaf.DNSNames, cert.Leaf.IPAddresses), sortedNames(o.DNSNames, o.IPAddresses)):
		return "the serving certificate is for other names"
	}
	return ""
}

func unexpired(certs []*x509.Certificate, now time.Time) []*x509.Certificate {
	return slices.DeleteFunc(slices.Clone(certs), func(c *x509.Certificate) bool { return !now.Before(c.NotAfter) })
}

func signedByOneOf(leaf *x509.Certificate, cas []*x509.Certificate) bool {
	return slices.ContainsFunc(cas, func(ca *x509.Certificate) bool { return leaf.CheckSignatureFrom(ca) == nil })
}

// sortedNames is the DNS names and IP addresses of a certificate, as one sorted set.
func sortedNames(dns []string, ips []net.IP) []string {
	names := slices.Clone(dns)
	for _, ip := range ips {
		names = append(names, "ip:"+ip.String())
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// next is when the material must be looked at again: a certificate reaching 2/3 of its life, or
// a replaced CA expiring.
func (m material) next() time.Time {
	next := renewAt(m.cert.Leaf)
	if m.ca != nil {
		next = earliest(next, renewAt(m.ca))
	}
	for _, c := range m.bundle {
		if c != m.ca {
			next = earliest(next, c.NotAfter)
		}
	}
	return next
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
}

// newCA returns a self-signed CA valid for validity from now; its name carries the time it was
// made, so that the CAs of one bundle have different subjects.
func newCA(now time.Time, validity time.Duration) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, fmt.Errorf("generating a CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("metacel-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	return ca, key, err
}

// newServing returns a serving certificate for o's names signed by ca, valid for o.CertValidity
// from now and never beyond the CA.
func (o Options) newServing(ca *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time) (*tls.Certificate, error) {
	key, err := newKey()
	if err != nil {
		return nil, fmt.Errorf("generating a serving key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: o.commonName()},
		DNSNames:     slices.Clone(o.DNSNames),
		IPAddresses:  slices.Clone(o.IPAddresses),
		NotBefore:    now.Add(-backdate),
		NotAfter:     earliest(now.Add(o.CertValidity), ca.NotAfter),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the serving certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

func (o Options) commonName() string {
	if len(o.DNSNames) > 0 {
		return o.DNSNames[0]
	}
	return o.IPAddresses[0].String()
}
