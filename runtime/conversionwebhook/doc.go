// Package conversionwebhook answers the API server's conversion requests for the parents'
// CRDs: the HTTP handler of apiextensions.k8s.io/v1 ConversionReviews (NewHandler), and the HTTPS
// server that serves it at /convert (Serve) with the certificate package servingcert keeps.
//
// The handler converts every object of a request with the Converter its kind's lookup returns
// (a policy's conversion, written in CEL); an object already at the desired version is returned
// as sent. If any object does not convert (no Converter for its kind, an error, a panic, or a
// result that is not the same object at the desired version), the answer is a Failure naming
// each such object (kind, namespace/name, from and to versions) with its error, and no object at
// all: the API server then fails the read or write, never serving part of a list. A request
// that is not a ConversionReview is answered 400 (413 over MaxRequestBytes, which an unpaged
// list of many parents must fit: the API server sends a list's objects in one request).
// Requests are counted by result, with their duration, when the handler is given Metrics
// (registered like the controller's, in the runtime's registry).
//
// Why in the runtime and stateless: the runtime already holds each policy's compiled conversion,
// and every replica serves (a Service in front of them all), so that conversions keep being
// answered while one replica restarts or is killed; nothing a request needs is held between
// requests. Why a server of its own rather than the metrics endpoint's: the API server calls it
// over HTTPS with a certificate it trusts by the CRD's caBundle, which the metrics endpoint does
// not have, and a conversion must not wait behind a scrape.
package conversionwebhook
