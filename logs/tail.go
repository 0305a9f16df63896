package logs

import (
	"encoding/binary"
	"time"
)

// tail is the bounded in-memory tail of one process instance: a byte ring of
// records (8 bytes wall time in Unix ns, 1 byte flags, 2 bytes length, text).
// It starts empty and grows by doubling up to the byte bound, so a process
// that wrote one line costs one small allocation, not the whole bound. Once
// either bound is reached, the oldest records are evicted.
//
// A tail is not safe for concurrent use; its procLog's mutex guards it.
type tail struct {
	buf   []byte // the ring; len(buf) is its capacity
	head  int    // offset of the oldest record
	used  int    // bytes in use
	count int    // records in use
}

const (
	recordHeader = 11
	// tailGrain is the smallest allocation and growth step: a process that
	// wrote one short line pays 64 bytes.
	tailGrain = 64

	flagStderr  = 1 << 0
	flagPartial = 1 << 1
	// flagStream holds a stream other than stdout and stderr (a hook's).
	flagStreamShift = 2
	flagStream      = 7 << flagStreamShift
)

// streamFlags is how a line of stream s is recorded in a tail.
func streamFlags(s Stream) byte {
	switch {
	case s == Stderr:
		return flagStderr
	case s.Hook():
		return byte(s) << flagStreamShift
	}
	return 0
}

// add appends a line, evicting the oldest lines to stay within maxLines and
// maxBytes. len(text) must be < 64 KiB and recordHeader+len(text) <= maxBytes.
func (t *tail) add(when int64, flags byte, text []byte, maxLines, maxBytes int) {
	rec := recordHeader + len(text)
	for t.count > 0 && t.count >= maxLines {
		t.evict()
	}
	if t.used+rec > len(t.buf) && len(t.buf) < maxBytes {
		need := (t.used + rec + tailGrain - 1) / tailGrain * tailGrain
		t.grow(min(max(2*len(t.buf), need), maxBytes))
	}
	for t.used+rec > len(t.buf) {
		t.evict()
	}
	var hdr [recordHeader]byte
	binary.LittleEndian.PutUint64(hdr[0:8], uint64(when))
	hdr[8] = flags
	binary.LittleEndian.PutUint16(hdr[9:11], uint16(len(text)))
	end := t.head + t.used
	end = t.put(end, hdr[:])
	t.put(end, text)
	t.used += rec
	t.count++
}

// put copies p into the ring at offset off (mod capacity) and returns the
// offset after it.
func (t *tail) put(off int, p []byte) int {
	off %= len(t.buf)
	n := copy(t.buf[off:], p)
	copy(t.buf, p[n:])
	return off + len(p)
}

// get copies len(p) bytes from the ring at offset off into p.
func (t *tail) get(off int, p []byte) {
	off %= len(t.buf)
	n := copy(p, t.buf[off:])
	copy(p[n:], t.buf)
}

func (t *tail) evict() {
	var lb [2]byte
	t.get(t.head+9, lb[:])
	rec := recordHeader + int(binary.LittleEndian.Uint16(lb[:]))
	t.head = (t.head + rec) % len(t.buf)
	t.used -= rec
	t.count--
	if t.count == 0 {
		t.head = 0
	}
}

// grow reallocates the ring with capacity n, oldest record first.
func (t *tail) grow(n int) {
	nb := make([]byte, n)
	if t.used > 0 {
		t.get(t.head, nb[:t.used])
	}
	t.buf, t.head = nb, 0
}

// lines returns the last n lines (all when n <= 0) of those captured at or
// after since (Unix ns; 0 for all), oldest first, stamped with the
// instance's names.
func (t *tail) lines(n int, since int64, in *instance) []Line {
	// Capture times only grow within an instance, unless the wall clock
	// was set back: count the matching records rather than assume a
	// suffix.
	var hdr [recordHeader]byte
	match := t.count
	if since != 0 {
		match = 0
		off := t.head
		for i := 0; i < t.count; i++ {
			t.get(off, hdr[:])
			if int64(binary.LittleEndian.Uint64(hdr[0:8])) >= since {
				match++
			}
			off += recordHeader + int(binary.LittleEndian.Uint16(hdr[9:11]))
		}
	}
	if n <= 0 || n > match {
		n = match
	}
	out := make([]Line, 0, n)
	off := t.head
	seen := 0 // matching records passed
	for i := 0; i < t.count; i++ {
		t.get(off, hdr[:])
		size := int(binary.LittleEndian.Uint16(hdr[9:11]))
		when := int64(binary.LittleEndian.Uint64(hdr[0:8]))
		if since == 0 || when >= since {
			if seen >= match-n {
				text := make([]byte, size)
				t.get(off+recordHeader, text)
				out = append(out, Line{
					Time:     time.Unix(0, when),
					Group:    in.proc.group,
					Process:  in.proc.process,
					Instance: in.instance,
					Stream:   streamOf(hdr[8]),
					Text:     string(text),
					Partial:  hdr[8]&flagPartial != 0,
				})
			}
			seen++
		}
		off += recordHeader + size
	}
	return out
}

func streamOf(flags byte) Stream {
	if s := Stream(flags&flagStream) >> flagStreamShift; s != 0 {
		return s
	}
	if flags&flagStderr != 0 {
		return Stderr
	}
	return Stdout
}
