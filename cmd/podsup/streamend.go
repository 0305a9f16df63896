package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// goneWithin is how long a client whose stream ended waits for podsup's
// socket to go away before it takes the end for a failure: up removes its
// socket as its last act, after the groups and their cgroups are gone.
const goneWithin = 10 * time.Second

// streamEnded reads the end of a stream (status -w) that no ^C ended. When
// podsup shut down, the end is normal: it says so on w and returns nil
// (exit 0), as a script that watches until podsup goes away expects.
// Otherwise (podsup crashed or the connection broke) err stands.
func streamEnded(w io.Writer, socket string, err error) error {
	if podsupGone(socket, goneWithin) {
		fmt.Fprintln(w, "podsup shut down")
		return nil
	}
	if err == nil {
		err = errors.New("podsup ended the stream and still runs")
	}
	return err
}

// podsupGone waits up to d for the socket file to be removed, as podsup up
// does when it exits; a socket left in place is a podsup that crashed (or
// still runs).
func podsupGone(socket string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Lstat(socket); errors.Is(err, os.ErrNotExist) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
