package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/sandbox/proc"
)

// hostileConfig runs a process whose output, probe output and command
// line hold what a terminal acts on: OSC 0 (retitle the window, ended by
// BEL), ED 2 (clear the screen) and a bare CR (overwrite the line).
const hostileConfig = `
supervisor {
  socket = "%s"
}
group "g" {
  process "p" {
    command = ["sh", "-c", "printf 'out\\033]0;pwned\\007\\033[2J\\rX\\n'; exec sleep 1000", "arg\u001b]0;cmd\u0007"]
    readiness_probe {
      exec { command = ["sh", "-c", "printf 'probe\\033]0;pwned\\007\\033[2J\\rX'; exit 1"] }
      period = "1s"
    }
  }
}
`

// hostileQuoted is the probe's output as podsup must show it.
const hostileQuoted = `probe\x1b]0;pwned\a\x1b[2J\rX`

// termCapture is a pseudo-terminal whose output side does no processing
// (no \n to \r\n), so that every byte read from it is one the program
// under test wrote.
type termCapture struct{ *pty }

func newTermCapture(t *testing.T) *termCapture {
	t.Helper()
	p := newPty(t, 200, 50, t.Fatalf)
	tio, err := unix.IoctlGetTermios(int(p.term.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Oflag &^= unix.OPOST
	if err := unix.IoctlSetTermios(int(p.term.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	return &termCapture{p}
}

// run runs podsup with args, its stdout and stderr on the terminal, and
// returns all it wrote there.
func (c *termCapture) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := podsupCmd(t, args...)
	cmd.Stdout, cmd.Stderr = c.term, c.term
	p, err := proc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := p.Wait(ctx); err != nil {
		_ = p.KillTree(syscall.SIGKILL)
		<-p.Done()
		t.Fatalf("podsup %s did not end: %v", strings.Join(args, " "), err)
	}
	c.term.Close()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the terminal of podsup %s never closed", strings.Join(args, " "))
	}
	return c.output()
}

// startUpOnTerminal is startUp with podsup up's stdout and stderr (its own
// log among them) on a terminal.
func startUpOnTerminal(t *testing.T, config string) (*upFixture, *termCapture) {
	t.Helper()
	dir := t.TempDir()
	f := &upFixture{dir: dir, cfg: filepath.Join(dir, "podsup.hcl"), socket: filepath.Join(dir, "podsup.sock")}
	f.write(t, fmt.Sprintf(config, f.socket))
	term := newTermCapture(t)
	cmd := podsupCmd(t, "up", "-f", f.cfg)
	cmd.Env = withTerm(cmd.Env, "dumb") // no colours: the test reads podsup's lines, not its prefixes
	cmd.Stdout, cmd.Stderr = term.term, term.term
	p, err := proc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// As a user stops it: SIGTERM stops its processes and removes its
		// cgroups.
		select {
		case <-p.Done():
		default:
			_ = p.Signal(syscall.SIGTERM)
			select {
			case <-p.Done():
			case <-time.After(20 * time.Second):
				_ = p.KillTree(syscall.SIGKILL)
				<-p.Done()
			}
		}
	})
	f.c = api.NewClient(f.socket)
	if !eventually(func() bool { _, err := f.c.Version(context.Background()); return err == nil }) {
		t.Fatalf("podsup up never answered on %s: %q", f.socket, term.output())
	}
	return f, term
}

// rawControl is the first character in s that a terminal would act on
// (a C0 control other than newline, DEL, a byte that is not UTF-8, a C1
// control, a bidi override), or "" when there is none.
func rawControl(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\n' || c == 0x7f {
			return fmt.Sprintf("%q at %d", c, i)
		}
	}
	if !utf8.ValidString(s) {
		return "byte that is not UTF-8"
	}
	for _, r := range s {
		if r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			return fmt.Sprintf("%U", r)
		}
	}
	return ""
}

// waitUnhealthy waits until the probe has failed at least once.
func waitUnhealthy(t *testing.T, f *upFixture) {
	t.Helper()
	if !eventually(func() bool {
		seen := false
		_ = f.c.Events(context.Background(), false, func(e api.Event) error {
			seen = seen || e.Reason == "Unhealthy"
			return nil
		})
		return seen
	}) {
		t.Fatal("the readiness probe never failed")
	}
}

// TestEscapesAreQuotedOnATerminal: a process and its probe that print
// escape sequences and a bare CR reach the operator's terminal quoted, in
// podsup events, podsup describe and podsup's own log (issue #25 item 4).
func TestEscapesAreQuotedOnATerminal(t *testing.T) {
	t.Parallel()
	f, upTerm := startUpOnTerminal(t, hostileConfig)
	f.waitRunning(t, "g", "p")
	waitUnhealthy(t, f)

	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"events"}, []string{"Readiness probe failed: command exited with code 1: " + hostileQuoted}},
		{[]string{"describe", "g"}, []string{
			"Last Result:", hostileQuoted, // the probe's last failure, and its Unhealthy events
			`arg\x1b]0;cmd\a]`, // the command line
		}},
		{[]string{"describe", "g/p"}, []string{hostileQuoted, `arg\x1b]0;cmd\a]`}},
	} {
		out := newTermCapture(t).run(t, append([]string{"--socket", f.socket}, tc.args...)...)
		if bad := rawControl(out); bad != "" {
			t.Errorf("podsup %s wrote a raw %s to the terminal:\n%q", tc.args[0], bad, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("podsup %s lacks %q:\n%q", strings.Join(tc.args, " "), w, out)
			}
		}
	}

	// podsup up's terminal: its own log (the Unhealthy event's line) and
	// the process's output ("g/p | ..."), quoted as podsup logs quotes it
	// on a terminal.
	var logLines []string
	if !eventually(func() bool {
		logLines = logLines[:0]
		found, output := false, false
		for _, l := range strings.Split(upTerm.output(), "\n") {
			logLines = append(logLines, l)
			found = found || strings.Contains(l, "Readiness probe failed: command exited with code 1: "+hostileQuoted)
			output = output || strings.HasPrefix(l, "g/p") && strings.HasSuffix(l, `| out\x1b]0;pwned\a\x1b[2J\rX`)
		}
		return found && output
	}) {
		t.Fatalf("podsup up's terminal lacks the quoted probe failure or the process's quoted output:\n%q", strings.Join(logLines, "\n"))
	}
	for _, l := range logLines {
		if bad := rawControl(l); bad != "" {
			t.Errorf("podsup's log wrote a raw %s to the terminal: %q", bad, l)
		}
	}
}

// TestLogsQuotesOnATerminalUnlessRaw: podsup logs shows a process's
// escape sequences quoted on a terminal, as they are with --raw, and as
// they are to a pipe.
func TestLogsQuotesOnATerminalUnlessRaw(t *testing.T) {
	t.Parallel()
	f, _ := startUpOnTerminal(t, hostileConfig)
	f.waitRunning(t, "g", "p")
	const raw = "out\x1b]0;pwned\a\x1b[2J\rX\n"
	if !eventually(func() bool { _, out := f.ctl(t, "logs", "g/p"); return out == raw }) {
		_, out := f.ctl(t, "logs", "g/p")
		t.Fatalf("podsup logs to a pipe = %q, want the process's bytes %q", out, raw)
	}
	out := newTermCapture(t).run(t, "--socket", f.socket, "logs", "g/p")
	if want := `out\x1b]0;pwned\a\x1b[2J\rX` + "\n"; out != want {
		t.Errorf("podsup logs on a terminal = %q, want %q", out, want)
	}
	out = newTermCapture(t).run(t, "--socket", f.socket, "logs", "--raw", "g/p")
	if out != raw {
		t.Errorf("podsup logs --raw on a terminal = %q, want %q", out, raw)
	}
}

// A process's words reach status, top, recreate and describe's tables
// quoted (their cells are built the same way for any output).
func TestTablesQuoteWhatATerminalWouldActOn(t *testing.T) {
	const bad = "x\x1b]0;pwned\a\x1b[2J\ry\u009b\u202e\t"
	const quoted = `x\x1b]0;pwned\a\x1b[2J\ry\u009b\u202e\t`
	now := time.Now()
	p := api.ProcessStatus{Name: "p", State: "waiting", Reason: "DependencyWait", Message: bad, StatusText: bad,
		Terminated: nil, LastTermination: &api.Termination{ExitCode: 1, Reason: bad, Message: bad}}
	st := api.StatusResponse{Groups: []api.GroupStatus{{Name: "g", Processes: []api.ProcessStatus{p}}}}

	check := func(what, out string) {
		t.Helper()
		if c := rawControl(out); c != "" {
			t.Errorf("%s holds a raw %s: %q", what, c, out)
		}
		if !strings.Contains(out, quoted) {
			t.Errorf("%s lacks %q: %q", what, quoted, out)
		}
	}

	var b bytes.Buffer
	tab := newStatusTable(&b, true)
	tab.rows(st, now)
	if err := tab.flush(); err != nil {
		t.Fatal(err)
	}
	check("status", b.String())

	check("top", strings.Join(alignCells([][]string{topCells(&topRow{key: topKey{"g", "p"}, p: p}, now), {bad}}), "\n"))
	// The screen shows a tab as a space.
	if out := fit(bad, 200); rawControl(out) != "" || out != strings.TrimSuffix(quoted, `\t`)+" " {
		t.Errorf("top's screen shows %q", out)
	}

	b.Reset()
	printRecreate(&b, api.Recreate{ID: "rc-1", Group: "g", Phase: "Completed", Message: bad,
		Processes: []api.RecreateProcess{{Name: "p", Phase: "Failed", Message: bad}}})
	check("recreate", b.String())

	b.Reset()
	d := api.GroupDescription{Name: "g", Phase: "Running", Conditions: []api.Condition{{Type: bad}},
		Processes: []api.ProcessDescription{{ProcessStatus: p, Command: []string{"sh", bad},
			Probes: []api.ProbeDescription{{Kind: "readiness", Action: "exec [" + bad + "]", LastResult: "failure", LastFailure: bad, LastFailureAt: &now}},
			Events: []api.Event{{Type: "Warning", Reason: "Unhealthy", Message: bad, FirstTime: now, LastTime: now, Count: 1}}}},
	}
	if err := printDescription(&b, d, false, now); err != nil {
		t.Fatal(err)
	}
	check("describe", b.String())

	// -o json: JSON escapes C0 controls itself; DEL, C1 and bidi
	// controls, which encoding/json leaves raw, are escaped too.
	b.Reset()
	if err := printJSONLine(&b, st); err != nil {
		t.Fatal(err)
	}
	if c := rawControl(b.String()); c != "" || !strings.Contains(b.String(), `x\u001b]0;pwned\u0007\u001b[2J\ry\u009b\u202e\t`) {
		t.Errorf("status -o json holds a raw %s: %s", c, b.String())
	}
}

// TestRunQuotesWhatItEchoes: podsup run's own messages (a command that
// is not there, its -v log with the command line) echo CMD, quoted
// (issue #25 item 4).
func TestRunQuotesWhatItEchoes(t *testing.T) {
	t.Parallel()
	code, out := runPodsup(t, "run", "-v", "--", "sh\x1b[2J\r")
	if code != 127 {
		t.Errorf("podsup run of a missing command exited %d, want 127: %q", code, out)
	}
	if bad := rawControl(out); bad != "" {
		t.Errorf("podsup run wrote a raw %s: %q", bad, out)
	}
	if !strings.Contains(out, `podsup: sh\x1b[2J\r: command not found`) {
		t.Errorf("podsup run's error lacks the quoted command: %q", out)
	}
	_, out = runPodsup(t, "run", "-v", "--", "sh", "-c", "exit 0", "\x1b]0;pwned\a")
	if bad := rawControl(out); bad != "" {
		t.Errorf("podsup run -v logged a raw %s: %q", bad, out)
	}
}
