package hooks

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/podsup/podsup/internal/httpget"
	"github.com/podsup/podsup/spec"
)

// UserAgent is sent by http_get hooks unless the hook sets its own.
const UserAgent = "podsup-hook/1"

// hookClient: a fresh connection per hook, no proxies from the
// environment, certificates not verified (kubelet's lifecycle handler does
// the same); same-host redirects are followed, and a redirect to another
// host ends with the 3xx, which counts as success (as for probes).
var hookClient = httpget.Client(0)

// runHTTPGet sends the GET. A status in 200–399 is success, anything else a
// *StatusError. (kubelet's HTTP lifecycle handler fails only on transport
// errors and ignores the status; podsup treats an error status as the hook
// failing, which is what an operator writing one expects.) The body, up
// to MaxOutput, is the Outcome's Output: a failure's message quotes it, as
// the kubelet's did ("Http lifecycle hook ... failed - error: %v,
// message: %q" with the body; today's handlers.go reads and discards it).
func runHTTPGet(ctx context.Context, a *spec.HTTPGetAction, timeout time.Duration) Outcome {
	get := httpget.New(*a, UserAgent, "")
	reqCtx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req, err := get.WithContext(reqCtx)
	if err != nil {
		return Outcome{Err: fmt.Errorf("unable to build hook request: %w", err)}
	}
	resp, err := hookClient.Do(req)
	var body []byte
	truncated := false
	if err == nil {
		// One byte past the bound tells a cut body from one that fits.
		body, err = io.ReadAll(io.LimitReader(resp.Body, MaxOutput+1))
		if len(body) > MaxOutput {
			body, truncated = body[:MaxOutput], true
		}
		_ = resp.Body.Close() // keep-alives are off: nothing to reuse
	}
	out := Outcome{Output: body, Truncated: truncated}
	switch {
	case err != nil && ctx.Err() == nil && reqCtx.Err() != nil:
		out.TimedOut, out.Err = true, fmt.Errorf("%w after %s: %v", ErrTimeout, timeout, err)
	case err != nil:
		out.Err = fmt.Errorf("hook HTTP GET %s: %w", get.URL, err)
	case resp.StatusCode < 200 || resp.StatusCode >= 400:
		out.Err = &StatusError{Code: resp.StatusCode}
	}
	return out
}
