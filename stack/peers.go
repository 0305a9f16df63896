package stack

import (
	"maps"
	"net"

	"github.com/podsup/podsup/sandbox/volume"
	"github.com/podsup/podsup/spec"
)

// Names between groups on one podsup bridge (issue #30's item 3, as
// kubelet's pods reach each other through cluster DNS, here without one):
// every group whose sandbox is on a bridge network gets, in its
// /etc/hosts, a line for each other group on that bridge, its name to
// its sandbox's address. The address is known only once the CNI ADD has
// given it, after the sandbox (and the hosts file it binds) is made, so
// each member's hosts file is rewritten in place whenever a member of
// its bridge comes, changes address or goes.

// bridgeMember is a group's sandbox on a bridge.
type bridgeMember struct {
	bridge  string
	ip      string
	sandbox spec.Sandbox // what its hosts file is written from
}

// bridgeOf is the bridge a sandbox's network joins, "" for none.
func bridgeOf(s spec.Sandbox) string {
	if s.Network == nil || s.Network.Mode != spec.NetworkBridge {
		return ""
	}
	if s.Network.Bridge != "" {
		return s.Network.Bridge
	}
	return spec.DefaultBridge
}

// joinBridge records group's new sandbox on its bridge, if it is on one,
// gives it its peers now and every other member the group: the caller
// holds g.mu (g is group's) and has just made the sandbox.
func (l *SandboxRuntime) joinBridge(group string, g *localGroup, s spec.Sandbox) {
	bridge := bridgeOf(s)
	if bridge == "" {
		l.leaveBridge(group)
		return
	}
	ip := ""
	if st, ok, err := l.rt.NetworkStatus(group); err == nil && ok && len(st.IPs) > 0 {
		if a, _, err := net.ParseCIDR(st.IPs[0]); err == nil {
			ip = a.String()
		}
	}
	l.mu.Lock()
	if l.members == nil {
		l.members = map[string]bridgeMember{}
	}
	l.members[group] = bridgeMember{bridge: bridge, ip: ip, sandbox: s}
	peers, others := l.peersLocked(group)
	l.mu.Unlock()
	g.peers = peers
	if g.vols != nil {
		_ = g.vols.SetPeers(namesOf(s, peers)) // the sandbox binds the file it rewrites
	}
	l.tellPeers(others)
}

// leaveBridge forgets group's sandbox, which is gone, and takes it out of
// the other members' hosts files.
func (l *SandboxRuntime) leaveBridge(group string) {
	l.mu.Lock()
	m, ok := l.members[group]
	delete(l.members, group)
	var others []string
	if ok {
		for name, o := range l.members {
			if o.bridge == m.bridge {
				others = append(others, name)
			}
		}
	}
	l.mu.Unlock()
	l.tellPeers(others)
}

// peersLocked is group's peers (the other members of its bridge with an
// address) and the other members' names. l.mu is held.
func (l *SandboxRuntime) peersLocked(group string) (peers map[string]string, others []string) {
	me := l.members[group]
	peers = map[string]string{}
	for name, o := range l.members {
		if name == group || o.bridge != me.bridge {
			continue
		}
		others = append(others, name)
		if o.ip != "" {
			peers[name] = o.ip
		}
	}
	return peers, others
}

// tellPeers rewrites each named group's hosts file with its current
// peers. It runs on a goroutine of its own: each group's lock is taken
// in turn, never while holding another's (a start holds its own group's
// while it joins).
func (l *SandboxRuntime) tellPeers(groups []string) {
	if len(groups) == 0 {
		return
	}
	go func() {
		for _, name := range groups {
			l.mu.Lock()
			m, ok := l.members[name]
			peers, _ := l.peersLocked(name)
			g := l.groups[name]
			l.mu.Unlock()
			if !ok || g == nil {
				continue
			}
			g.mu.Lock()
			if !maps.Equal(g.peers, peers) {
				g.peers = peers
				if g.vols != nil {
					_ = g.vols.SetPeers(namesOf(m.sandbox, peers))
				}
			}
			g.mu.Unlock()
		}
	}()
}

func namesOf(s spec.Sandbox, peers map[string]string) volume.Names {
	return volume.Names{Sandbox: s, Peers: peers}
}
