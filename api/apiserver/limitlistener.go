package apiserver

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podsup/podsup/api"
)

// Limits bound what the API's clients may hold: connections (each an fd,
// which podsup needs for its processes' pipes) and followers, the
// long-lived streams (events -f, logs -f, status watches, exec). Accepting
// never waits: a connection over a limit is answered at once with an
// error that says which limit, and closed. Followers have limits of their
// own below the connections', so short requests (status, health,
// describe) always find a connection free, whatever streams are open. Root
// and podsup's own uid (trusted) count against the totals only; every
// other uid also against its own limit and the untrusted totals, so one
// group member cannot crowd out another, or root.
type Limits struct {
	Conns, UntrustedConns, ConnsPerUID             int
	Followers, UntrustedFollowers, FollowersPerUID int
}

// DefaultLimits are the limits New uses, scaled down when podsup's file
// limit is low (limitsFor).
var DefaultLimits = Limits{
	Conns: 1024, UntrustedConns: 512, ConnsPerUID: 64,
	Followers: 256, UntrustedFollowers: 128, FollowersPerUID: 32,
}

// limitsFor scales DefaultLimits down to a file limit of nofile fds: the
// API's connections may take a quarter of them at most, the rest being
// for the processes' pipes and logs (with Go's raised soft limit, the
// defaults apply unchanged almost everywhere).
func limitsFor(nofile uint64) Limits {
	l := DefaultLimits
	budget := nofile / 4
	if budget >= uint64(l.Conns) {
		return l
	}
	n := max(int(budget), 16)
	return Limits{
		Conns: n, UntrustedConns: n / 2, ConnsPerUID: max(n/16, 2),
		Followers: n / 4, UntrustedFollowers: n / 8, FollowersPerUID: max(n/32, 1),
	}
}

// processLimits is limitsFor podsup's RLIMIT_NOFILE.
func processLimits() Limits {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return DefaultLimits
	}
	return limitsFor(rl.Cur)
}

// limiter counts what is open against Limits.
type limiter struct {
	lim Limits

	mu                           sync.Mutex
	conns, untrustedConns        int
	connsByUID                   map[int]int
	followers, untrustedFollower int
	followersByUID               map[int]int
}

func newLimiter(l Limits) *limiter {
	return &limiter{lim: l, connsByUID: map[int]int{}, followersByUID: map[int]int{}}
}

// overLimit is a refusal: status is 503 when podsup as a whole is full,
// 429 when the peer's own share is.
type overLimit struct {
	status int
	msg    string
}

func (e *overLimit) Error() string { return e.msg }

// connect counts a new connection of p, or says which limit it exceeds.
func (l *limiter) connect(p Peer, known, trusted bool) (func(), *overLimit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.conns >= l.lim.Conns:
		return nil, &overLimit{http.StatusServiceUnavailable, fmt.Sprintf(
			"podsup is serving %d connections, its limit: close idle clients and followers (`podsup events -f`, `logs -f`, `status -w`) and retry", l.conns)}
	case !known || trusted:
	case l.untrustedConns >= l.lim.UntrustedConns:
		return nil, &overLimit{http.StatusServiceUnavailable, fmt.Sprintf(
			"podsup is serving %d connections of users other than root and its own, their limit: retry later", l.untrustedConns)}
	case l.connsByUID[p.UID] >= l.lim.ConnsPerUID:
		return nil, &overLimit{http.StatusTooManyRequests, fmt.Sprintf(
			"too many connections (%d) for uid %d: close some `podsup events -f`/`logs -f` and retry", l.connsByUID[p.UID], p.UID)}
	}
	l.conns++
	counted := known && !trusted
	if counted {
		l.untrustedConns++
		l.connsByUID[p.UID]++
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.conns--
			if counted {
				l.untrustedConns--
				if l.connsByUID[p.UID]--; l.connsByUID[p.UID] == 0 {
					delete(l.connsByUID, p.UID)
				}
			}
		})
	}, nil
}

// follow counts a new stream of p, or says which limit it exceeds.
func (l *limiter) follow(p Peer, trusted bool) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.followers >= l.lim.Followers:
		return nil, fmt.Errorf("too many open streams (%d) on podsup: close some `podsup events -f`/`logs -f`/`status -w`/`exec`", l.followers)
	case trusted:
	case l.followersByUID[p.UID] >= l.lim.FollowersPerUID:
		return nil, fmt.Errorf("too many open streams (%d) for uid %d: close some `podsup events -f`/`logs -f`", l.followersByUID[p.UID], p.UID)
	case l.untrustedFollower >= l.lim.UntrustedFollowers:
		return nil, fmt.Errorf("too many open streams (%d) of users other than root and podsup's own: retry later", l.untrustedFollower)
	}
	l.followers++
	if !trusted {
		l.untrustedFollower++
		l.followersByUID[p.UID]++
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.followers--
		if !trusted {
			l.untrustedFollower--
			if l.followersByUID[p.UID]--; l.followersByUID[p.UID] == 0 {
				delete(l.followersByUID, p.UID)
			}
		}
	}, nil
}

// limitListener accepts every connection at once and counts it; one over
// a limit gets its refusal and is closed, off the accepting goroutine.
type limitListener struct {
	net.Listener
	l       *limiter
	trusted func(Peer) bool
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		p, perr := peerOf(c)
		release, over := l.l.connect(p, perr == nil, perr == nil && l.trusted(p))
		if over != nil {
			if refusing.Add(1) > maxRefusing {
				// A flood: answering each would hold its fd for
				// refuseTime. Close at once instead.
				refusing.Add(-1)
				c.Close()
				continue
			}
			go func() {
				defer refusing.Add(-1)
				refuse(c, over)
			}()
			continue
		}
		return &limitConn{Conn: c, release: release, peer: p, peerErr: perr}, nil
	}
}

// refuseTime bounds how long a refused connection is kept: long enough to
// read the request (so that closing does not reset the answer away) and
// write the answer.
const refuseTime = 2 * time.Second

// refusing counts the refusals being answered, at most maxRefusing.
var refusing atomic.Int64

const maxRefusing = 64

// refuse answers c's first request with e as an API error and closes it.
func refuse(c net.Conn, e *overLimit) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(refuseTime))
	buf := make([]byte, 4096)
	_, _ = c.Read(buf) // the request's start, at most: enough to answer
	body, _ := json.Marshal(api.Error{Status: e.status, Message: e.msg})
	body = append(body, '\n')
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		e.status, http.StatusText(e.status), len(body), body)
}

// limitConn gives its count back once, on the first Close, and carries the
// peer read at accept.
type limitConn struct {
	net.Conn
	release func()
	peer    Peer
	peerErr error
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
