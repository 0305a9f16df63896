package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/sandbox/proc"
)

// pty is a pseudo-terminal made through /dev/ptmx: the test holds the
// master, the program under test gets the terminal.
type pty struct {
	master, term *os.File
	done         chan struct{} // closed once the master reads EIO: no one holds the terminal

	mu  sync.Mutex
	out bytes.Buffer // everything the program wrote, escapes and all
}

func openPty(t *testing.T, cols, rows int) *pty {
	t.Helper()
	return newPty(t, cols, rows, t.Skipf)
}

// newPty is openPty calling noPty (t.Skipf, t.Fatalf) when there is no
// /dev/ptmx.
func newPty(t *testing.T, cols, rows int, noPty func(format string, args ...any)) *pty {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		noPty("no pseudo-terminals here: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	term, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(term.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)}); err != nil {
		t.Fatal(err)
	}
	p := &pty{master: m, term: term, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { term.Close(); m.Close() })
	return p
}

func (p *pty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// since is the output after the first n bytes.
func (p *pty) since(n int) string { return p.output()[n:] }

func (p *pty) send(t *testing.T, keys string) {
	t.Helper()
	if _, err := p.master.WriteString(keys); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits until what was written after mark matches re.
func (p *pty) waitFor(t *testing.T, mark int, re *regexp.Regexp, what string) {
	t.Helper()
	if !eventually(func() bool { return re.MatchString(p.since(mark)) }) {
		out := p.since(mark)
		t.Fatalf("top never showed %s; the last of the screen:\n%q", what, out[max(len(out)-3000, 0):])
	}
}

// withTerm is env with TERM set to term (and no other TERM, which getenv
// could find first).
func withTerm(env []string, term string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TERM=") {
			out = append(out, kv)
		}
	}
	return append(out, "TERM="+term)
}

func TestTopInATerminalShowsProcessesAndRestartsOne(t *testing.T) {
	t.Parallel()
	f := startUp(t, upConfig)
	f.waitRunning(t, "web", "api")
	f.waitRunning(t, "web", "sidecar")
	before := restartCount(f, "web", "api")
	term := openPty(t, 120, 30)
	c := podsupCmd(t, "--socket", f.socket, "top")
	c.Env = withTerm(c.Env, "xterm")
	c.Stdin, c.Stdout, c.Stderr = term.term, term.term, term.term
	p, err := proc.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-p.Done():
		default:
			_ = p.KillTree(syscall.SIGKILL)
			<-p.Done()
		}
	})

	// The alternate screen, and every process with its state and usage.
	term.waitFor(t, 0, regexp.MustCompile(`\x1b\[\?1049h`), "the alternate screen")
	term.waitFor(t, 0, regexp.MustCompile(`web\s+api\s+running\s+yes\s+0\s`), "web/api running")
	term.waitFor(t, 0, regexp.MustCompile(`web\s+sidecar\s+running`), "web/sidecar running")
	term.waitFor(t, 0, regexp.MustCompile(`batch\s+crash\s+(waiting: CrashLoopBackOff|running)`), "the crash loop")
	term.waitFor(t, 0, regexp.MustCompile(`GROUP\s+PROCESS\s+STATE\s+READY\s+RESTARTS\s+LAST EXIT\s+CPU\s+MEMORY`), "the header")
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil && os.Geteuid() == 0 {
		term.waitFor(t, 0, regexp.MustCompile(`web\s+api\s+running.*\s\d+\.\d%\s`), "web/api's CPU use")
	}

	// Filter down to web/api, ask for a restart, decline, then accept.
	mark := len(term.output())
	term.send(t, "/web/api\r")
	term.waitFor(t, mark, regexp.MustCompile(`1 shown, filter: web/api`), "the filter")
	mark = len(term.output())
	term.send(t, "r")
	term.waitFor(t, mark, regexp.MustCompile(`restart web/api\? \(y/n\)`), "the restart question")
	term.send(t, "n")
	term.waitFor(t, mark, regexp.MustCompile(`restart cancelled`), "the cancelled restart")
	if n := restartCount(f, "web", "api"); n != before {
		t.Fatalf("a declined restart restarted web/api: %d → %d", before, n)
	}
	mark = len(term.output())
	term.send(t, "r")
	term.waitFor(t, mark, regexp.MustCompile(`restart web/api\? \(y/n\)`), "the restart question again")
	term.send(t, "y")
	term.waitFor(t, mark, regexp.MustCompile(`restart of web/api requested`), "the restart's answer")
	if !eventually(func() bool { return restartCount(f, "web", "api") == before+1 }) {
		t.Fatalf("web/api's restart count stayed %d after y", restartCount(f, "web", "api"))
	}
	term.waitFor(t, mark, regexp.MustCompile(`web\s+api\s+running\s+yes\s+1 \(\d+s ago\)`), "the restart in the table")
	if evs := withReasonAPI(f.events(t), "Killing"); len(evs) == 0 {
		t.Error("no Killing event for the restart")
	}

	// d: its description; q back; l: its log; q back.
	mark = len(term.output())
	term.send(t, "d")
	term.waitFor(t, mark, regexp.MustCompile(`Restart Count:\s+1`), "the description")
	term.send(t, "q")
	mark = len(term.output())
	term.send(t, "l")
	term.waitFor(t, mark, regexp.MustCompile(`log of web/api \(following\)`), "the log view")
	term.send(t, "q")

	// q: exits 0, leaves the alternate screen and restores the terminal.
	mark = len(term.output())
	term.send(t, "q")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := p.Wait(ctx)
	if err != nil || e.Code() != 0 {
		t.Fatalf("top after q: %v %v\n%q", e, err, term.since(mark))
	}
	term.waitFor(t, mark, regexp.MustCompile(`\x1b\[\?25h\x1b\[\?1049l`), "the terminal given back")
	tio, err := unix.IoctlGetTermios(int(term.term.Fd()), unix.TCGETS)
	if err != nil || tio.Lflag&unix.ECHO == 0 || tio.Lflag&unix.ICANON == 0 {
		t.Errorf("the terminal is still raw after top: %v %+v", err, tio)
	}
}

// Without a terminal, or on a dumb one, top prints its table once.
func TestTopWithoutATerminalPrintsATable(t *testing.T) {
	t.Parallel()
	f := startUp(t, upConfig)
	f.waitRunning(t, "web", "api")
	code, out := f.ctl(t, "top")
	rows := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^GROUP\s+PROCESS\s+STATE\s+READY\s+RESTARTS\s+LAST EXIT\s+CPU TIME\s+MEMORY$`),
		regexp.MustCompile(`(?m)^web\s+api\s+running\s+yes\s+0\s+-\s+\S+\s+\S+$`),
		regexp.MustCompile(`(?m)^batch\s+crash\s+`),
	}
	if code != 0 || !matchAll(rows, out) || strings.Contains(out, "\x1b") {
		t.Fatalf("top on a pipe: %d, lacks %v:\n%q", code, missing(rows, out), out)
	}
	// TERM=dumb on a terminal: the same table, no screen drawing.
	term := openPty(t, 100, 20)
	c := podsupCmd(t, "--socket", f.socket, "top")
	c.Env = withTerm(c.Env, "dumb")
	c.Stdin, c.Stdout, c.Stderr = term.term, term.term, term.term
	p, err := proc.Start(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if e, err := p.Wait(ctx); err != nil || e.Code() != 0 {
		t.Fatalf("top with TERM=dumb: %v %v", e, err)
	}
	term.waitFor(t, 0, regexp.MustCompile(`web\s+api\s+running`), "the table on a dumb terminal")
	if out := term.output(); strings.Contains(out, "\x1b[?1049h") {
		t.Errorf("top drew a screen on a dumb terminal: %q", out)
	}
}
