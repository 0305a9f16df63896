package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Error is the body of every failed request, and what the client returns.
type Error struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Error classes of the protocol. A server's backend wraps them to say what
// went wrong; the server answers each with its HTTP status code (404, 400,
// 409, 503, 413), which the client returns in an *Error.
var (
	ErrNotFound    = errors.New("not found")
	ErrBadRequest  = errors.New("bad request")
	ErrConflict    = errors.New("conflict")
	ErrUnavailable = errors.New("unavailable")
	ErrTooLarge    = errors.New("request too large")
)

// IsNotFound reports whether err says a named group, process or request
// does not exist (HTTP 404 from the server).
func IsNotFound(err error) bool {
	var ae *Error
	return errors.Is(err, ErrNotFound) || (errors.As(err, &ae) && ae.Status == http.StatusNotFound)
}

// UntrustedServerError is returned, before anything was sent, when the
// process listening on the socket is neither root nor the client's own
// user: someone else may have put a socket at that path.
type UntrustedServerError struct {
	Socket string
	// ServerUID is the listening process's uid; -1 when the kernel did not
	// say.
	ServerUID int
	YourUID   int
	cause     error
}

func (e *UntrustedServerError) Error() string {
	if e.ServerUID < 0 {
		return fmt.Sprintf("refusing to talk to the server on %s: unable to learn which user runs it (%v)", e.Socket, e.cause)
	}
	return fmt.Sprintf("refusing to talk to the server on %s: it runs as uid %d, not root or you (uid %d); someone else may have put a socket there (check --socket / PODSUP_SOCKET and who owns its directory)", e.Socket, e.ServerUID, e.YourUID)
}

func (e *UntrustedServerError) Unwrap() error { return e.cause }

// TimeoutError is returned when podsup did not answer a request within
// the client's Timeout.
type TimeoutError struct {
	Socket  string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("podsup on %s did not answer within %s: it may be overloaded (too many connections or followers) or stuck; try again, or allow longer with --request-timeout (0 waits as long as it takes)", e.Socket, e.Timeout)
}
