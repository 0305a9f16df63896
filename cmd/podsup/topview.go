package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/podsup/podsup/api"
	"github.com/podsup/podsup/internal/termsafe"
)

// The view of `podsup top`: what it shows and how keys change it, with no
// I/O. The terminal loop (top.go) feeds it status, usage and keys, runs the
// commands its keys return, and draws what render gives.

// topKey names a process.
type topKey struct{ group, process string }

func (k topKey) String() string { return k.group + "/" + k.process }

// topRow is one process as top shows it.
type topRow struct {
	key   topKey
	p     api.ProcessStatus
	usage *api.Usage
	// cpu is the CPU use between the last two usage readings, in percent
	// of one CPU; hasCPU is false until there are two.
	cpu    float64
	hasCPU bool
}

// topMode is what the screen shows.
type topMode int

const (
	modeTable   topMode = iota
	modeConfirm         // the table, with a y/n question on the last line
	modeText            // a process's log or description
)

// topCmdKind is what a key asks the loop to do.
type topCmdKind int

const (
	cmdNone topCmdKind = iota
	cmdQuit
	cmdAction   // start, stop or restart of cmd.key
	cmdLog      // show cmd.key's log
	cmdDescribe // show cmd.key's description
	cmdCloseText
)

type topCmd struct {
	kind topCmdKind
	verb string // cmdAction: start, stop, restart
	key  topKey
}

// cpuSample is a cgroup's CPU time at a reading.
type cpuSample struct {
	seconds float64
	at      time.Time
}

type topView struct {
	rows  map[topKey]*topRow
	order []topKey // status order: groups as podsup lists them, init first

	filter  string
	editing bool // typing the filter after "/"
	cursor  int  // index into the shown rows
	scroll  int  // first shown row on screen

	mode    topMode
	pending topCmd // the action modeConfirm asks about

	textTitle string
	text      []string
	textTop   int
	textEnd   bool // keep the text scrolled to its end as lines come (a log)

	msg           string // the last line's note: an answer, an error
	width, height int
	lastCPU       map[topKey]cpuSample
}

func newTopView(width, height int) *topView {
	return &topView{rows: map[topKey]*topRow{}, lastCPU: map[topKey]cpuSample{}, width: width, height: height}
}

// setStatus merges a status: full replaces every row (the first answer
// of a watch), otherwise it holds only the processes that changed.
func (v *topView) setStatus(st api.StatusResponse, full bool) {
	seen := map[topKey]bool{}
	var order []topKey
	for _, g := range st.Groups {
		for _, p := range append(append([]api.ProcessStatus{}, g.Init...), g.Processes...) {
			k := topKey{g.Name, p.Name}
			seen[k] = true
			order = append(order, k)
			if r := v.rows[k]; r != nil {
				r.p = p
			} else {
				v.rows[k] = &topRow{key: k, p: p}
			}
		}
	}
	if full {
		v.order = order
		for k := range v.rows {
			if !seen[k] {
				delete(v.rows, k)
				delete(v.lastCPU, k)
			}
		}
	} else {
		for _, k := range order {
			if !slices.Contains(v.order, k) {
				v.order = append(v.order, k)
			}
		}
	}
	v.clampCursor()
}

// removeGroup drops the rows of a group the watch said was removed.
func (v *topView) removeGroup(name string) {
	v.order = slices.DeleteFunc(v.order, func(k topKey) bool { return k.group == name })
	for k := range v.rows {
		if k.group == name {
			delete(v.rows, k)
			delete(v.lastCPU, k)
		}
	}
	v.clampCursor()
}

// setUsage takes a reading of every process's cgroup (GET
// /v1/status?usage=true) at now: memory as read, CPU as the share of one
// CPU used since the last reading. Processes it no longer lists are gone
// (a reload removed them from a group the watch still has).
func (v *topView) setUsage(st api.StatusResponse, now time.Time) {
	present := map[topKey]bool{}
	for _, g := range st.Groups {
		for _, p := range append(append([]api.ProcessStatus{}, g.Init...), g.Processes...) {
			k := topKey{g.Name, p.Name}
			present[k] = true
			r := v.rows[k]
			if r == nil {
				continue // the watch brings it
			}
			r.usage, r.hasCPU = p.Usage, false
			if p.Usage == nil {
				delete(v.lastCPU, k)
				continue
			}
			s := cpuSample{p.Usage.CPUSeconds, now}
			if last, ok := v.lastCPU[k]; ok && now.After(last.at) && s.seconds >= last.seconds {
				r.cpu = 100 * (s.seconds - last.seconds) / now.Sub(last.at).Seconds()
				r.hasCPU = true
			}
			v.lastCPU[k] = s
		}
	}
	if len(v.order) > 0 {
		kept := v.order[:0]
		for _, k := range v.order {
			if present[k] {
				kept = append(kept, k)
			} else {
				delete(v.rows, k)
				delete(v.lastCPU, k)
			}
		}
		v.order = kept
	}
	v.clampCursor()
}

// shown is the rows the filter lets through, in order.
func (v *topView) shown() []*topRow {
	var out []*topRow
	for _, k := range v.order {
		r := v.rows[k]
		if r == nil {
			continue
		}
		if v.filter != "" && !strings.Contains(k.String()+" "+r.p.State+" "+r.p.Reason, v.filter) {
			continue
		}
		out = append(out, r)
	}
	return out
}

func (v *topView) clampCursor() {
	n := len(v.shown())
	v.cursor = min(v.cursor, n-1)
	v.cursor = max(v.cursor, 0)
}

// selected is the process under the cursor; false when none is shown.
func (v *topView) selected() (topKey, bool) {
	rows := v.shown()
	if v.cursor >= len(rows) {
		return topKey{}, false
	}
	return rows[v.cursor].key, true
}

// tableRows is how many rows fit between the two header lines and the
// last line.
func (v *topView) tableRows() int { return max(v.height-3, 1) }

// key applies one key (as decodeKeys names them) and says what the loop
// must do.
func (v *topView) key(k string) topCmd {
	if k == "ctrl-c" {
		return topCmd{kind: cmdQuit}
	}
	switch v.mode {
	case modeConfirm:
		v.mode = modeTable
		if k == "y" || k == "Y" {
			v.msg = v.pending.verb + " of " + v.pending.key.String() + " requested..."
			return v.pending
		}
		v.msg = v.pending.verb + " cancelled"
		return topCmd{}
	case modeText:
		return v.textKey(k)
	}
	if v.editing {
		switch k {
		case "enter":
			v.editing = false
		case "esc":
			v.editing, v.filter = false, ""
		case "backspace":
			if n := len(v.filter); n > 0 {
				_, size := utf8.DecodeLastRuneInString(v.filter)
				v.filter = v.filter[:n-size]
			}
		default:
			if utf8.RuneCountInString(k) == 1 {
				v.filter += k
			}
		}
		v.cursor, v.scroll = 0, 0
		v.clampCursor()
		return topCmd{}
	}
	v.msg = ""
	switch k {
	case "q":
		return topCmd{kind: cmdQuit}
	case "/":
		v.editing = true
	case "esc":
		v.filter = ""
		v.clampCursor()
	case "up", "k":
		v.cursor = max(v.cursor-1, 0)
	case "down", "j":
		v.cursor++
		v.clampCursor()
	case "pgup":
		v.cursor = max(v.cursor-v.tableRows(), 0)
	case "pgdn":
		v.cursor += v.tableRows()
		v.clampCursor()
	case "home", "g":
		v.cursor = 0
	case "end", "G":
		v.cursor = len(v.shown()) - 1
		v.clampCursor()
	case "l", "enter", "d", "r", "s", "S":
		sel, ok := v.selected()
		if !ok {
			v.msg = "no process selected"
			return topCmd{}
		}
		switch k {
		case "l", "enter":
			return topCmd{kind: cmdLog, key: sel}
		case "d":
			return topCmd{kind: cmdDescribe, key: sel}
		case "S": // starting harms nothing: no question
			v.msg = "start of " + sel.String() + " requested..."
			return topCmd{kind: cmdAction, verb: "start", key: sel}
		}
		verb := map[string]string{"r": "restart", "s": "stop"}[k]
		v.pending = topCmd{kind: cmdAction, verb: verb, key: sel}
		v.mode = modeConfirm
	}
	return topCmd{}
}

func (v *topView) textKey(k string) topCmd {
	page := max(v.height-2, 1)
	switch k {
	case "q", "esc", "l", "d":
		v.mode, v.text = modeTable, nil
		return topCmd{kind: cmdCloseText}
	case "up", "k":
		v.textTop--
	case "down", "j":
		v.textTop++
	case "pgup":
		v.textTop -= page
	case "pgdn", " ":
		v.textTop += page
	case "home", "g":
		v.textTop = 0
	case "end", "G":
		v.textTop = len(v.text)
	}
	v.textTop = min(v.textTop, max(len(v.text)-page, 0))
	v.textTop = max(v.textTop, 0)
	v.textEnd = v.textTop >= len(v.text)-page
	return topCmd{}
}

// showText switches to a text view: a log that follows (end) or a
// description.
func (v *topView) showText(title string, lines []string, end bool) {
	v.mode, v.textTitle, v.text, v.textTop, v.textEnd = modeText, title, lines, 0, end
	if end {
		v.textTop = max(len(lines)-max(v.height-2, 1), 0)
	}
}

// topTextMax is how many lines the text view keeps.
const topTextMax = 5000

// addText appends lines to the text view, following them when it was at
// its end.
func (v *topView) addText(lines ...string) {
	v.text = append(v.text, lines...)
	// A log followed for hours keeps its last topTextMax lines only.
	if n := len(v.text) - topTextMax; n > 0 {
		v.text = v.text[n:]
		v.textTop = max(v.textTop-n, 0)
	}
	if v.textEnd {
		v.textTop = max(len(v.text)-max(v.height-2, 1), 0)
	}
}

// render gives the screen: at most height lines, none wider than width,
// the selected row in reverse video.
func (v *topView) render(now time.Time) []string {
	if v.mode == modeText {
		return v.renderText()
	}
	rows := v.shown()
	title := fmt.Sprintf("podsup top - %d processes", len(v.order))
	if v.filter != "" || v.editing {
		title += fmt.Sprintf(", %d shown, filter: %s", len(rows), v.filter)
		if v.editing {
			title += "_"
		}
	}
	title += "   " + now.Local().Format("15:04:05")
	cells := [][]string{{"GROUP", "PROCESS", "STATE", "READY", "RESTARTS", "LAST EXIT", "CPU", "MEMORY"}}
	// Keep the cursor on screen.
	n := v.tableRows()
	if v.cursor < v.scroll {
		v.scroll = v.cursor
	}
	if v.cursor >= v.scroll+n {
		v.scroll = v.cursor - n + 1
	}
	v.scroll = max(min(v.scroll, len(rows)-n), 0)
	visible := rows[v.scroll:min(v.scroll+n, len(rows))]
	for _, r := range visible {
		cells = append(cells, topCells(r, now))
	}
	lines := []string{fit(title, v.width)}
	for i, l := range alignCells(cells) {
		l = fit(l, v.width)
		if i > 0 && v.scroll+i-1 == v.cursor && v.mode != modeText {
			l = "\x1b[7m" + l + strings.Repeat(" ", max(v.width-utf8.RuneCountInString(l), 0)) + "\x1b[0m"
		}
		lines = append(lines, l)
	}
	for len(lines) < v.height-1 {
		lines = append(lines, "")
	}
	return append(lines, fit(v.footer(), v.width))
}

func (v *topView) footer() string {
	switch {
	case v.mode == modeConfirm:
		return v.pending.verb + " " + v.pending.key.String() + "? (y/n)"
	case v.editing:
		return "filter: type to narrow, enter to keep, esc to clear"
	case v.msg != "":
		return v.msg
	}
	return "q quit  / filter  l log  d describe  r restart  s stop  S start  up/down move"
}

func (v *topView) renderText() []string {
	page := max(v.height-2, 1)
	lines := []string{fit(v.textTitle, v.width)}
	end := min(v.textTop+page, len(v.text))
	for _, l := range v.text[min(v.textTop, end):end] {
		lines = append(lines, fit(l, v.width))
	}
	for len(lines) < v.height-1 {
		lines = append(lines, "")
	}
	return append(lines, fit("q back  up/down/pgup/pgdn scroll  ctrl-c quit", v.width))
}

// topCells is a row's columns; the columns of the status table, with the
// cgroup's CPU and memory.
func topCells(r *topRow, now time.Time) []string {
	name := r.key.process
	switch { // as podsup status names them
	case r.p.Sidecar:
		name += " (sidecar)"
	case r.p.Init:
		name += " (init)"
	}
	cpu, mem := "-", "-"
	if r.hasCPU {
		cpu = fmt.Sprintf("%.1f%%", r.cpu)
	}
	if r.usage != nil && r.usage.MemoryBytes > 0 {
		mem = humanBytes(r.usage.MemoryBytes)
		if r.usage.MemoryLimitBytes > 0 {
			mem += "/" + humanBytes(r.usage.MemoryLimitBytes)
		}
	}
	return []string{r.key.group, name, shortState(r.p), yesNo(r.p.Ready), restarts(r.p, now), lastExit(r.p, now), cpu, mem}
}

// shortState is the state and its reason, without status's back-off
// detail ("waiting: CrashLoopBackOff"): top's columns stay narrow, and d
// shows the rest.
func shortState(p api.ProcessStatus) string {
	if p.Reason != "" {
		return p.State + ": " + p.Reason
	}
	return p.State
}

// alignCells pads every cell but the last of each line to its column's
// widest, two spaces apart. The cells are quoted for the terminal first
// (termsafe): names, reasons and messages may hold anything.
func alignCells(cells [][]string) []string {
	var widths []int
	for _, row := range cells {
		for i, c := range row {
			c = termsafe.Quote(c)
			row[i] = c
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	out := make([]string, len(cells))
	for j, row := range cells {
		var b strings.Builder
		for i, c := range row {
			b.WriteString(c)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		out[j] = b.String()
	}
	return out
}

// fit cuts s to width runes, and makes control characters (a process's
// output may hold any) harmless to the screen: a tab becomes a space, the
// rest is quoted (termsafe). Text quoted already (the table's cells, a
// description) holds none, and its backslashes are left as they are.
func fit(s string, width int) string {
	s = strings.ReplaceAll(s, "\t", " ")
	if termsafe.Needs(s, termsafe.Escaped) {
		s = string(termsafe.Append(nil, s, termsafe.Escaped))
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= width {
			break
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// frame is what draws lines over the whole screen: from the top left,
// each line cleared to its end, the rest of the screen cleared.
func frame(lines []string) []byte {
	var b bytes.Buffer
	b.WriteString("\x1b[H")
	for i, l := range lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(l)
		b.WriteString("\x1b[K")
	}
	b.WriteString("\x1b[J")
	return b.Bytes()
}

// decodeKeys names the keys in one read from a raw terminal: printable
// characters as themselves, and ctrl-c, enter, esc, backspace, up, down,
// pgup, pgdn, home, end. Unknown escape sequences are dropped.
func decodeKeys(b []byte) []string {
	var keys []string
	for len(b) > 0 {
		c := b[0]
		switch {
		case c == 0x03:
			keys = append(keys, "ctrl-c")
		case c == '\r' || c == '\n':
			keys = append(keys, "enter")
		case c == 0x7f || c == 0x08:
			keys = append(keys, "backspace")
		case c == 0x1b:
			if len(b) == 1 || (b[1] != '[' && b[1] != 'O') {
				keys = append(keys, "esc")
				break
			}
			// CSI or SS3: parameters, then one final byte in 0x40-0x7e.
			end := 2
			for end < len(b) && (b[end] < 0x40 || b[end] > 0x7e) {
				end++
			}
			if end == len(b) {
				return keys // cut off: drop it
			}
			if name, ok := escapeKeys[string(b[2:end+1])]; ok {
				keys = append(keys, name)
			}
			b = b[end+1:]
			continue
		case c < 0x20:
			// other control keys: none bound
		default:
			r, size := utf8.DecodeRune(b)
			keys = append(keys, string(r))
			b = b[size:]
			continue
		}
		b = b[1:]
	}
	return keys
}

var escapeKeys = map[string]string{
	"A": "up", "B": "down", "5~": "pgup", "6~": "pgdn",
	"H": "home", "F": "end", "1~": "home", "4~": "end",
}
