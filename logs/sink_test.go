package logs

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podsup/podsup/spec"
)

func TestConsoleOutPrefixesLinesLikeCompose(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	h := newTestHub(t, HubOptions{Out: &out})
	// The wider name first: padding follows the widest name attached so far.
	_, b := startSh(t, h, "db", "postgres", "1", spec.Log{}, `echo ready >&2`)
	_, a := startSh(t, h, "web", "api", "1", spec.Log{}, `echo hello`)
	waitDone(t, a)
	waitDone(t, b)
	if err := h.Close(); err != nil { // flushes Out
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := map[string]bool{"web/api     | hello": true, "db/postgres | ready": true}
	if len(got) != 2 || !want[got[0]] || !want[got[1]] {
		t.Fatalf("console output %q", out.String())
	}
}

func TestJSONOutDecodes(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	h := newTestHub(t, HubOptions{Out: &out, Format: FormatJSON})
	_, a := startSh(t, h, "web", "api", "7", spec.Log{SeparateStreams: true}, `printf 'say "hi"\t\\o/\n'; echo err >&2`)
	waitDone(t, a)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	type record struct {
		Time     time.Time `json:"time"`
		Group    string    `json:"group"`
		Process  string    `json:"process"`
		Instance string    `json:"instance"`
		Stream   string    `json:"stream"`
		Line     string    `json:"line"`
	}
	byStream := map[string]record{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		byStream[r.Stream] = r
	}
	o, e := byStream["stdout"], byStream["stderr"]
	if len(byStream) != 2 || o.Line != "say \"hi\"\t\\o/" || e.Line != "err" ||
		o.Group != "web" || o.Process != "api" || o.Instance != "7" || o.Time.IsZero() {
		t.Fatalf("decoded %+v from %q", byStream, out.String())
	}
}

func TestBlockedOutDoesNotStallCaptureAndCountsDrops(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// Nobody reads r yet: once its 64 KiB pipe buffer is full, every Write
	// to w blocks.
	h := newTestHub(t, HubOptions{Out: w, OutBufferBytes: 16 << 10})
	_, a := startSh(t, h, "web", "api", "1", spec.Log{}, `seq 1 50000`)
	waitDone(t, a) // capture kept up although Out is stuck
	if got := texts(mustTail(t, h, "web", "api", 1, false)); !equalStrings(got, []string{"50000"}) {
		t.Fatalf("last captured line %q", got)
	}

	// Now read Out to the end (Close flushes, then EOF). Every line must
	// be either written, in order, or counted by a notice where it was lost.
	lines := make(chan []string)
	go func() {
		var all []string
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			all = append(all, sc.Text())
		}
		lines <- all
	}()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	_ = w.Close() // EOF for the reader
	notice := regexp.MustCompile(`^podsup: dropped (\d+) lines$`)
	next, dropped := 1, 0
	for _, line := range <-lines {
		if m := notice.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			next += n
			dropped += n
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(line, "web/api | "))
		if err != nil || n != next {
			t.Fatalf("line %q where line %d was due", line, next)
		}
		next++
	}
	if next != 50001 || dropped == 0 {
		t.Fatalf("accounted for %d lines of 50000, %d of them dropped", next-1, dropped)
	}
	t.Logf("%d of 50000 lines dropped while Out was blocked", dropped)
}

func TestFilesRotateKeepingMaxFilesAndBoundedSizes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newTestHub(t, HubOptions{Dir: dir})
	const maxSize = 2000
	l := spec.Log{MaxSize: maxSize, MaxFiles: 3, SeparateStreams: true}
	// ~50 bytes per record: about 40 records per file, 500 lines rotate
	// a dozen times.
	_, a := startSh(t, h, "web", "api", "1", l, `seq -f 'line %g' 1 500; echo to-stderr >&2`)
	waitDone(t, a)
	base := filepath.Join(dir, "web", "api.log")
	var all []string
	for i := 2; i >= 0; i-- { // oldest first
		name := base
		if i > 0 {
			name += "." + strconv.Itoa(i)
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > maxSize || len(b) == 0 {
			t.Fatalf("%s has %d bytes; bound %d", name, len(b), maxSize)
		}
		all = append(all, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	}
	if _, err := os.Stat(base + ".3"); !os.IsNotExist(err) {
		t.Fatalf("a fourth file exists: %v", err)
	}
	// The kept files hold a contiguous run of the newest lines.
	cri := regexp.MustCompile(`^\S+Z (stdout|stderr) F (.*)$`)
	var stdout []int
	sawStderr := false
	for _, line := range all {
		m := cri.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not a CRI line: %q", line)
		}
		if m[1] == "stderr" {
			sawStderr = m[2] == "to-stderr"
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(m[2], "line "))
		if err != nil {
			t.Fatal(err)
		}
		stdout = append(stdout, n)
	}
	if !sawStderr || stdout[len(stdout)-1] != 500 {
		t.Fatalf("newest lines missing: stderr %v, last %d", sawStderr, stdout[len(stdout)-1])
	}
	for i := 1; i < len(stdout); i++ {
		if stdout[i] != stdout[i-1]+1 {
			t.Fatalf("gap between %d and %d", stdout[i-1], stdout[i])
		}
	}

	// A second instance appends to the same file and rotates on.
	_, b := startSh(t, h, "web", "api", "2", l, `echo second`)
	waitDone(t, b)
	live, _ := os.ReadFile(base)
	if !strings.HasSuffix(string(live), " stdout F second\n") || len(live) > maxSize {
		t.Fatalf("live file after the second instance: %q", live)
	}
}
