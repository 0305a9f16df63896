package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/tty"
)

// usageEvery is how often top reads the cgroups' usage while it is open:
// the viewer asks, podsup does nothing between requests.
const usageEvery = 2 * time.Second

func newTopCmd(f *ctlFlags) *cobra.Command {
	var once bool
	cmd := &cobra.Command{
		Use:   "top",
		Short: "A live view of every process: state, restarts, last exit, CPU and memory",
		Long: `Show every process in a live table, like top: group, process, state,
ready, restarts, last exit, and the CPU (share of one CPU over the last 2s)
and memory its cgroup uses. States change on the screen as podsup reports
them (the status watch, GET /v1/status?watch=true); CPU and memory are read
every 2s while top is open.

Keys:
  up/down, j/k, pgup/pgdn   move
  /                         filter by name, state or reason (enter keeps it, esc clears it)
  l or enter                the selected process's log, followed
  d                         its description (podsup describe)
  r, s                      restart, stop it (asks y/n)
  S                         start it
  q, ctrl-c                 quit (q leaves a log or description first)

Where the screen cannot be drawn (output not a terminal, TERM=dumb or
unset) or with --once, top prints the table once with each process's CPU
time and memory, and exits. -o json prints the same once, as the API's
status object with each process's usage (GET /v1/status?usage=true).`,
		Example: `  podsup top
  podsup top --once | grep -w -e GROUP -e web     # one group's processes
  podsup top -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			c := f.client()
			if asJSON, _ := f.json(); asJSON { // -o checked by the root (checkOutputFlag)
				st, err := c.StatusUsage(ctx)
				if err != nil {
					return err
				}
				return printJSON(cmd.OutOrStdout(), st)
			}
			in, out := os.Stdin, os.Stdout
			if once || tty.Dumb() || !tty.IsTerminal(int(in.Fd())) || !tty.IsTerminal(int(out.Fd())) {
				return topOnce(ctx, c, cmd.OutOrStdout())
			}
			// Say so now if podsup is not there, rather than on a screen
			// that waits for it.
			if _, err := c.Version(ctx); err != nil {
				return err
			}
			return runTop(ctx, c, in, out)
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "print the table once and exit, as on a dumb terminal")
	return cmd
}

// topOnce prints the table once: the fallback without a terminal.
func topOnce(ctx context.Context, c *api.Client, w io.Writer) error {
	st, err := c.StatusUsage(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	cells := [][]string{{"GROUP", "PROCESS", "STATE", "READY", "RESTARTS", "LAST EXIT", "CPU TIME", "MEMORY"}}
	for _, g := range st.Groups {
		for _, p := range append(append([]api.ProcessStatus{}, g.Init...), g.Processes...) {
			r := &topRow{key: topKey{g.Name, p.Name}, p: p, usage: p.Usage}
			row := topCells(r, now)
			row[6] = "-"
			if p.Usage != nil && p.Usage.CPU != "" {
				row[6] = p.Usage.CPU
			}
			cells = append(cells, row)
		}
	}
	var b strings.Builder
	for _, l := range alignCells(cells) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// Messages to the loop from the goroutines that talk to podsup.
type (
	topStatusMsg struct {
		st   api.StatusResponse
		full bool
	}
	topUsageMsg struct {
		st  api.StatusResponse
		at  time.Time
		err error
	}
	topNoteMsg string
	// topGroupGoneMsg names a group a reload removed.
	topGroupGoneMsg string
	topTextMsg      struct {
		title string
		lines []string
		end   bool
	}
	topLineMsg string
)

// runTop draws the live view on the terminal until q, ctrl-c or ctx ends,
// and leaves the terminal as it found it.
func runTop(ctx context.Context, c *api.Client, in, out *os.File) (err error) {
	inFD, outFD := int(in.Fd()), int(out.Fd())
	restore, err := tty.MakeRaw(inFD)
	if err != nil {
		return fmt.Errorf("unable to put the terminal in raw mode: %w", err)
	}
	// The alternate screen keeps the shell's screen; the cursor hides.
	if _, err := out.WriteString("\x1b[?1049h\x1b[?25l"); err != nil {
		_ = restore()
		return err
	}
	defer func() {
		_, _ = out.WriteString("\x1b[?25h\x1b[?1049l") // a gone terminal has nothing to restore
		if rerr := restore(); err == nil && rerr != nil {
			err = fmt.Errorf("unable to restore the terminal: %w", rerr)
		}
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan any, 64)
	send := func(m any) {
		select {
		case msgs <- m:
		case <-ctx.Done():
		}
	}
	go topWatch(ctx, c, send)
	go topUsage(ctx, c, send)
	keys := make(chan []byte)
	go readKeys(in, keys)
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)

	w, h, ok := tty.Size(outFD)
	if !ok {
		w, h = 80, 24
	}
	v := newTopView(w, h)
	var text textSlot // the log follower or describer of the text view
	defer text.stop()
	tick := time.NewTicker(time.Second) // the clock and "Xs ago" columns
	defer tick.Stop()
	for {
		if _, err := out.Write(frame(v.render(time.Now()))); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-winch:
			if w, h, ok := tty.Size(outFD); ok {
				v.width, v.height = w, h
			}
		case b, ok := <-keys:
			if !ok {
				return nil // the terminal closed
			}
			for _, k := range decodeKeys(b) {
				cmd := v.key(k)
				switch cmd.kind {
				case cmdQuit:
					return nil
				case cmdAction:
					go func() {
						res, err := c.Action(ctx, cmd.verb, cmd.key.group, cmd.key.process, "")
						if err != nil {
							send(topNoteMsg(cmd.verb + " of " + cmd.key.String() + " failed: " + err.Error()))
							return
						}
						send(topNoteMsg(res.Message))
					}()
				case cmdLog, cmdDescribe:
					tctx := text.start(ctx)
					if cmd.kind == cmdLog {
						v.showText("log of "+cmd.key.String()+" (following)", nil, true)
						go topFollowLog(tctx, c, cmd.key, send)
					} else {
						v.showText("describe "+cmd.key.String(), []string{"..."}, false)
						go topDescribe(tctx, c, cmd.key, send)
					}
				case cmdCloseText:
					text.stop()
				}
			}
		case m := <-msgs:
			// Everything that has come, then one frame: a burst of status
			// changes or a log's backlog is not a redraw per message.
			for more := true; more; {
				v.handle(m)
				select {
				case m = <-msgs:
				default:
					more = false
				}
			}
		}
	}
}

// handle applies one message of top's feeders to the view.
func (v *topView) handle(m any) {
	switch m := m.(type) {
	case topStatusMsg:
		v.setStatus(m.st, m.full)
	case topUsageMsg:
		if m.err != nil {
			v.msg = "reading usage: " + m.err.Error()
		} else {
			v.setUsage(m.st, m.at)
		}
	case topGroupGoneMsg:
		v.removeGroup(string(m))
	case topNoteMsg:
		v.msg = string(m)
	case topTextMsg:
		if v.mode == modeText {
			v.showText(m.title, m.lines, m.end)
		}
	case topLineMsg:
		if v.mode == modeText {
			v.addText(string(m))
		}
	}
}

// textSlot holds the cancel of what feeds the text view: one at a time.
type textSlot struct{ cancel context.CancelFunc }

// start stops the previous feeder and returns the context of the next.
func (s *textSlot) start(ctx context.Context) context.Context {
	s.stop()
	ctx, s.cancel = context.WithCancel(ctx)
	return ctx
}

func (s *textSlot) stop() {
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
}

// topWatch feeds the status watch to the loop, and watches again after
// podsup went away (a restart of podsup: the view catches up when it is
// back).
func topWatch(ctx context.Context, c *api.Client, send func(any)) {
	for {
		// Until the BOOKMARK the watch sends the whole state, one group at
		// a time; the view takes it at once, as one full status.
		first := &api.StatusResponse{}
		err := c.Watch(ctx, "", "", false, func(e api.WatchEvent) error {
			switch {
			case e.Type == api.WatchBookmark && first != nil:
				send(topStatusMsg{st: *first, full: true})
				first = nil
			case e.Group == nil:
			case e.Type == api.WatchDeleted:
				send(topGroupGoneMsg(e.Group.Name))
			case first != nil:
				first.Groups = append(first.Groups, *e.Group)
			default:
				send(topStatusMsg{st: api.StatusResponse{Groups: []api.GroupStatus{*e.Group}}})
			}
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			send(topNoteMsg("lost podsup's status watch: " + err.Error() + " (trying again)"))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(usageEvery):
		}
	}
}

// topUsage reads every process's cgroup usage now and every usageEvery.
func topUsage(ctx context.Context, c *api.Client, send func(any)) {
	t := time.NewTicker(usageEvery)
	defer t.Stop()
	for {
		st, err := c.StatusUsage(ctx)
		if ctx.Err() != nil {
			return
		}
		send(topUsageMsg{st: st, at: time.Now(), err: err})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// topFollowLog sends a process's kept lines and then each new one.
func topFollowLog(ctx context.Context, c *api.Client, k topKey, send func(any)) {
	err := c.ProcessLogs(ctx, k.group, k.process, api.LogsOptions{Tail: 1000, Follow: true}, func(l api.LogLine) error {
		if l.Skipped > 0 {
			send(topLineMsg(fmt.Sprintf("[%d lines skipped]", l.Skipped)))
			return nil
		}
		send(topLineMsg(l.Line))
		return nil
	})
	if err != nil && ctx.Err() == nil {
		send(topLineMsg("[" + err.Error() + "]"))
	}
}

// topDescribe sends a process's description as podsup describe prints it.
func topDescribe(ctx context.Context, c *api.Client, k topKey, send func(any)) {
	d, err := c.Describe(ctx, k.group, k.process)
	var b bytes.Buffer
	if err == nil {
		err = printDescription(&b, d.Group, true, time.Now())
	}
	if err != nil {
		b.Reset()
		b.WriteString(err.Error())
	}
	send(topTextMsg{title: "describe " + k.String(), lines: strings.Split(strings.TrimRight(b.String(), "\n"), "\n")})
}

// readKeys passes what the terminal sends on; it ends (closing keys) when
// the terminal does. It is left blocked in read when top returns: the
// command exits right after.
func readKeys(in *os.File, keys chan<- []byte) {
	defer close(keys)
	buf := make([]byte, 256)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			keys <- append([]byte(nil), buf[:n]...)
		}
		if err != nil {
			return
		}
	}
}
