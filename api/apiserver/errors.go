package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/podsup/podsup/api"
)

// Refusals of the server itself, beside api's error classes.
var (
	errForbidden    = errors.New("forbidden")
	errNoSuchMethod = errors.New("method not allowed")
)

// statusOf is the HTTP status code of err's class.
func statusOf(err error) int {
	switch {
	case errors.Is(err, api.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, api.ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, api.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, api.ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, api.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errForbidden):
		return http.StatusForbidden
	case errors.Is(err, errNoSuchMethod):
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

func writeError(w http.ResponseWriter, err error) {
	status := statusOf(err)
	writeJSON(w, status, &api.Error{Status: status, Message: err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may be gone; nothing to do
}

// badRequest wraps a message as ErrBadRequest.
func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", api.ErrBadRequest, fmt.Sprintf(format, args...))
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
