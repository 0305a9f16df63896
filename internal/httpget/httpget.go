// Package httpget owns the one HTTP GET of an http_get probe and an
// http_get hook (spec.HTTPGetAction): the request's address and headers,
// the transport and which redirects are followed. Kubelet, too, builds
// both from one place (pkg/probe/http); what each side makes of the
// answer stays in probes and hooks.
package httpget

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/podsup/podsup/spec"
)

// maxRedirects is how many same-host redirects a GET follows (kubelet's
// redirect checker, like net/http's default).
const maxRedirects = 10

// transport is shared by every GET. Keep-alives are off, as in kubelet:
// each GET opens a fresh connection, so a probe measures whether a new
// client can connect, and no idle connections pile up between periods.
// Certificates are not verified (kubelet does the same); proxies from the
// environment are ignored.
var transport = &http.Transport{
	Proxy:              nil,
	DisableKeepAlives:  true,
	DisableCompression: true,
	TLSClientConfig:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // health probes and hooks, as kubelet
	DialContext:        (&net.Dialer{}).DialContext,
}

// Client is a client on the shared transport whose whole exchange, body
// included, is bounded by timeout (0: only by the request's context). It
// follows a redirect only to the original host, up to 10 times; another
// host ends the chain with the 3xx response, which the caller sees.
func Client(timeout time.Duration) *http.Client {
	return &http.Client{Transport: transport, Timeout: timeout, CheckRedirect: sameHostRedirects}
}

func sameHostRedirects(req *http.Request, via []*http.Request) error {
	if req.URL.Hostname() != via[0].URL.Hostname() {
		return http.ErrUseLastResponse
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	return nil
}

// Request is the GET of one action, built once and sent as often as
// needed.
type Request struct {
	URL    string
	Header http.Header
	// Host, from the action's "Host" header, replaces the URL's host in
	// the request (net/http ignores a Host entry in Header).
	Host string
}

// New is a's GET: its URL (spec.HTTPGetAction.URL), its headers, and
// userAgent and accept where a sets no User-Agent or Accept ("" adds
// none).
func New(a spec.HTTPGetAction, userAgent, accept string) Request {
	r := Request{URL: a.URL(), Header: make(http.Header, len(a.Headers)+2)}
	for k, v := range a.Headers {
		if http.CanonicalHeaderKey(k) == "Host" {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	for k, v := range map[string]string{"User-Agent": userAgent, "Accept": accept} {
		if v != "" && r.Header.Get(k) == "" {
			r.Header.Set(k, v)
		}
	}
	return r
}

// WithContext is an *http.Request for r, with a header of its own.
func (r Request) WithContext(ctx context.Context) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header = r.Header.Clone()
	if r.Host != "" {
		req.Host = r.Host
	}
	return req, nil
}
