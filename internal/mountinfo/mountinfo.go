// Package mountinfo reads the kernel's list of mounts (/proc/PID/mountinfo,
// proc(5)): the one parser of podsup's cgroup detection and of a sandbox's
// read-only view of the host.
package mountinfo

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Mount is one line: "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3
// /dev/root rw,errors=continue".
type Mount struct {
	ID           uint64
	Root         string // the mount's root within its file system
	MountPoint   string
	FSType       string
	SuperOptions []string
}

// Parse reads every well-formed line of r; a line it cannot read is
// skipped, as a new kernel's extra fields must not stop podsup.
func Parse(r io.Reader) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 6 || len(fields) < sep+4 {
			continue
		}
		id, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, Mount{
			ID:           id,
			Root:         Unescape(fields[3]),
			MountPoint:   Unescape(fields[4]),
			FSType:       fields[sep+1],
			SuperOptions: strings.Split(fields[sep+3], ","),
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading mounts: %w", err)
	}
	return out, nil
}

// Unescape undoes the kernel's octal escapes (\040 for a space).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
