// Command clientcheck is the smallest useful Go program built on package
// api: it prints the status of a running podsup as JSON. It exists so that
// package api's tests can list what such a program links (TestClientLinksNoRuntime):
// a client must carry neither the supervisor, nor the sandbox, nor the
// cgroup code.
//
//	go run ./api/internal/clientcheck /run/podsup/podsup.sock
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/podsup/podsup/api"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: clientcheck SOCKET")
		os.Exit(2)
	}
	st, err := api.NewClient(os.Args[1]).Status(context.Background(), "", "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(st); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
