package apiserver

import (
	"bytes"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// newHTTPErrorLog is the http.Server's own error log (an accept that
// failed, a handler's panic) as lines of podsup's log instead of raw lines
// on stderr. Out of fds, net/http retries accept every few milliseconds
// and would say so each time: that is said once a minute, naming podsup's
// limit, as a start that ran out of fds says it.
func newHTTPErrorLog(l zerolog.Logger) *log.Logger {
	return log.New(&httpErrorLog{log: l}, "", 0)
}

type httpErrorLog struct {
	log zerolog.Logger

	mu         sync.Mutex
	lastEMFILE time.Time
}

func (w *httpErrorLog) Write(p []byte) (int, error) {
	msg := string(bytes.TrimSpace(p))
	if bytes.Contains(p, []byte("too many open files")) {
		w.mu.Lock()
		quiet := time.Since(w.lastEMFILE) < time.Minute
		if !quiet {
			w.lastEMFILE = time.Now()
		}
		w.mu.Unlock()
		if quiet {
			return len(p), nil
		}
		var lim unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
		msg = fmt.Sprintf("the control socket cannot accept a connection: too many open files: podsup's limit is %d (RLIMIT_NOFILE); raise it (LimitNOFILE= in its unit, ulimit -n where it is started); accepting again once fds are free", lim.Cur)
	}
	w.log.Warn().Msg(msg)
	return len(p), nil
}
