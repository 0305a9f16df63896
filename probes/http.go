package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/podsup/podsup/internal/httpget"
	"github.com/podsup/podsup/spec"
)

// UserAgent is sent by http_get probes unless the probe sets its own.
const UserAgent = "podsup-probe/1"

// HTTPGetHandler sends one GET. A status in 200–399 is Success; anything
// else, or a request that fails or exceeds its timeout, is Failure with the
// reason as message (kubelet's pkg/probe/http).
//
// Redirects are treated as kubelet treats them: same-host redirects are
// followed up to 10; a redirect to another host is not followed and the 3xx
// itself counts as Success, with a message saying so (kubelet's "Warning").
type HTTPGetHandler struct {
	req    httpget.Request
	client *http.Client
}

var _ DetailedHandler = (*HTTPGetHandler)(nil)

// NewHTTPGetHandler builds a handler for a; timeout bounds the whole exchange,
// body included.
func NewHTTPGetHandler(a spec.HTTPGetAction, timeout time.Duration) (*HTTPGetHandler, error) {
	scheme := strings.ToLower(a.Scheme)
	if scheme == "" {
		scheme = "http"
	}
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("unable to build http_get probe: scheme %q is not http or https", a.Scheme)
	}
	h := &HTTPGetHandler{req: httpget.New(a, UserAgent, "*/*"), client: httpget.Client(timeout)}
	if _, err := url.Parse(h.req.URL); err != nil {
		return nil, fmt.Errorf("unable to build http_get probe: %w", err)
	}
	return h, nil
}

// URL is the address the handler probes.
func (h *HTTPGetHandler) URL() string { return h.req.URL }

func (h *HTTPGetHandler) Probe(ctx context.Context) (Result, string, error) {
	d, err := h.ProbeDetail(ctx)
	return d.Result, d.Message, err
}

// ProbeDetail also returns the response body, capped at MaxOutput.
func (h *HTTPGetHandler) ProbeDetail(ctx context.Context) (Detail, error) {
	req, err := h.req.WithContext(ctx)
	if err != nil {
		return Detail{Result: Unknown}, fmt.Errorf("unable to build probe request: %w", err)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			// The worker is stopping: not the probed process's fault.
			return Detail{Result: Unknown}, fmt.Errorf("probe cancelled: %w", ctx.Err())
		}
		return Detail{Result: Failure, Message: err.Error()}, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxOutput))
	if err != nil && !errors.Is(err, io.EOF) {
		// kubelet calls this a prober error and discards the result; a
		// server that stalls or breaks mid-body is unhealthy, so podsup
		// counts it as a Failure.
		return Detail{Result: Failure, Message: fmt.Sprintf("reading response body: %v", err), Output: body}, nil
	}
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return Detail{Result: Success, Output: body}, nil
	case code >= 300 && code < 400:
		msg := fmt.Sprintf("probe terminated redirects: status %d, location %q", code, resp.Header.Get("Location"))
		return Detail{Result: Success, Message: msg, Output: body}, nil
	default:
		// The message leaves the body out (kubernetes #99425: bodies can
		// hold secrets); the body is in Output.
		return Detail{Result: Failure, Message: fmt.Sprintf("HTTP probe failed with statuscode: %d", code), Output: body}, nil
	}
}
