package api

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsNotFoundReadsClientErrorsAndTheClass(t *testing.T) {
	if !IsNotFound(&Error{Status: 404, Message: "x"}) || IsNotFound(&Error{Status: 400}) {
		t.Error("IsNotFound misreads client errors")
	}
	if !IsNotFound(fmt.Errorf("no group %q: %w", "x", ErrNotFound)) || IsNotFound(ErrConflict) {
		t.Error("IsNotFound misreads the error classes")
	}
}

func TestClientNamesTheSocketItCannotReach(t *testing.T) {
	path := filepath.Join(t.TempDir(), "podsup.sock")
	_, err := NewClient(path).Version(context.Background())
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "podsup up") {
		t.Fatalf("client error %v does not name the socket and say how to start podsup", err)
	}
}
