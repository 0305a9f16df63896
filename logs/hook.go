package logs

import "github.com/podsup/podsup/spec"

// capturedLocked is group/process's procLog for captured output, made
// (with its prefix colour and, with Dir, its file) if there is none or
// the process was passthrough. h.mu is held.
func (h *Hub) capturedLocked(group, process string) *procLog {
	key := group + "/" + process
	p := h.procs[key]
	if p == nil || p.passthrough {
		p = &procLog{group: group, process: process, name: key}
		if h.opts.PrefixColor != nil {
			p.color = h.opts.PrefixColor(h.colors)
			h.colors++
		}
		if h.opts.Dir != "" {
			p.file = newRotatingFile(h.opts.Dir, group, process)
		}
		h.setProcLocked(p)
	}
	return p
}

// AppendHook adds what a lifecycle hook of group/process printed to the
// log of the instance it ran for, one Line per line, in the hook's stream
// (HookStream(point): "hook:post_start" in JSON and the API, a
// "[hook:post_start] " mark before the text on the console and in the
// file, whose stream column says stdout). The lines go where the
// process's own would: the instance's tail when it is kept (current or
// previous), the followers, podsup's output (unless l.NoStdout) and the
// file. A pre_start runs before its instance is attached: its lines begin
// that instance's tail, which its Attach takes over, so `podsup logs`
// shows what a pre_start that failed the start printed. With l.Mode
// passthrough nothing is kept: the lines go to podsup's output only.
//
// The lines are stamped when AppendHook is called, that is when the hook
// ended: hook output is gathered by the hook runner, not streamed. Like
// the capture loop, it never waits for a reader.
func (h *Hub) AppendHook(group, process, instanceID string, l spec.Log, point spec.HookPoint, output []byte) {
	if len(output) == 0 {
		return
	}
	h.readMu.Lock() // the lock the loop holds to dispatch and write files
	defer h.readMu.Unlock()
	key := group + "/" + process
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	passthrough := l.Mode == "passthrough"
	p := h.procs[key]
	switch {
	case !passthrough && point == spec.PreStart:
		p = h.capturedLocked(group, process) // its instance is about to be attached
	case passthrough || p == nil || p.passthrough:
		// Nothing kept: passthrough, or a process already forgotten
		// (removed by a reload before its post_stop ended), which must
		// not come back.
		p = &procLog{group: group, process: process, name: key}
	}
	h.mu.Unlock()
	h.widen(len(key))

	p.mu.Lock()
	var in *instance
	for _, c := range []*instance{p.cur, p.prev} {
		if c != nil && c.instance == instanceID {
			in = c
			break
		}
	}
	if in == nil {
		// Not kept: a post_stop that ended after two more instances
		// started, or a pre_start, whose instance is not attached yet.
		in = &instance{proc: p, instance: instanceID}
		if point == spec.PreStart && !passthrough {
			if p.cur != nil { // an instance that ended, or a start its pre_start failed
				p.prev = p.cur
			}
			p.cur, p.early = in, in
		}
	}
	p.mu.Unlock()

	s := &stream{fd: -1, kind: HookStream(point), c: &capture{inst: in, limits: fileLimitsOf(l), quiet: l.NoStdout}}
	var b batch
	h.split(s, output, &b)
	if len(s.partial) > 0 {
		b.add(s.partial, false)
	}
	h.dispatch(s, h.clock.Now(), &b)
	if p.file != nil {
		// The file stays open while the process's output is; with none
		// open (a post_stop after the exit), it is closed again.
		h.mu.Lock()
		idle := p.open == 0
		h.mu.Unlock()
		if idle {
			p.file.close()
		}
	}
}
