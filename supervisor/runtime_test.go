package supervisor

import (
	"errors"
	"fmt"
	"testing"
)

// The exit code a failed start is recorded with: the runtime's StartError
// says it, wrapped or not; anything else is 128 (the program never ran).
func TestStartFailureCode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want int
	}{
		{&StartError{Code: 127, Err: errors.New("not found")}, 127},
		{fmt.Errorf("starting: %w", &StartError{Code: 126, Err: errors.New("not executable")}), 126},
		{&StartError{Err: errors.New("no code")}, 128},
		{errors.New("sandbox failed"), 128},
	}
	for _, c := range cases {
		if got := startFailureCode(c.err); got != c.want {
			t.Errorf("startFailureCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
