package core

// An instance's own status line (sd_notify STATUS=): the core keeps it
// with the instance and shows it in the status while that instance is
// current.

// StatusTextInput is the free-form status line an instance reported
// (sd_notify STATUS=).
type StatusTextInput struct {
	Instance string
	Text     string
}

func (StatusTextInput) isInput() {}

// statusText records an instance's status line; a line for an instance
// that is no longer current is dropped.
func (g *Group) statusText(in StatusTextInput) {
	p := g.procByInstance(in.Instance)
	if p == nil || p.inst == nil {
		return
	}
	p.inst.statusText = in.Text
}
