package apiserver

import (
	"bytes"
	"os"
	"runtime"
	"strconv"

	"github.com/podsup/podsup/api"
)

// readSelf gathers podsup's own resource use. Fields it cannot read stay 0.
func readSelf() api.SelfResponse {
	out := api.SelfResponse{Pid: os.Getpid(), Goroutines: runtime.NumGoroutine()}
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		out.OpenFDs = len(ents) - 1 // the directory's own fd while it is read
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		out.Threads = int(statusField(b, "Threads:"))
		out.RSSBytes = statusField(b, "VmRSS:") * 1024 // kB
	}
	return out
}

// statusField is the number after name in /proc/PID/status, 0 if absent.
func statusField(status []byte, name string) int64 {
	i := bytes.Index(status, []byte(name))
	if i < 0 {
		return 0
	}
	rest := bytes.TrimLeft(status[i+len(name):], " \t")
	end := bytes.IndexAny(rest, " \t\n")
	if end < 0 {
		end = len(rest)
	}
	n, _ := strconv.ParseInt(string(rest[:end]), 10, 64)
	return n
}
