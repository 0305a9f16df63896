// Command minibox is the one program of the image that podsup-kube's
// play tests build: a static binary, so that a root filesystem holding it
// alone runs, in the manner of busybox (a tool per first argument).
//
//	minibox echo ARGS...   print ARGS and exit 0
//	minibox report ARGS... print ARGS, the working directory, uid, gid and
//	                       the environment, then wait for SIGTERM (exit 0)
package main

import (
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "minibox: want echo or report")
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "echo":
		fmt.Println(strings.Join(args, " "))
	case "report":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		wd, _ := os.Getwd()
		fmt.Printf("args=%q\n", args)
		fmt.Printf("cwd=%s uid=%d gid=%d\n", wd, os.Getuid(), os.Getgid())
		env := os.Environ()
		slices.Sort(env)
		for _, e := range env {
			fmt.Printf("env %s\n", e)
		}
		fmt.Println("report done")
		<-sigs
	default:
		fmt.Fprintf(os.Stderr, "minibox: no tool %q\n", os.Args[1])
		os.Exit(127)
	}
}
