package kube

import "strings"

// expand is kubelet's $(VAR) expansion (k8s.io/kubernetes
// third_party/forked/golang/expansion), which it applies to env values
// and to command and args: $(NAME) becomes lookup(NAME) when that finds
// it and stays as written when not, $$ becomes $, and any other $ (a
// shell's $HOME, an unclosed "$(") is left alone. Whatever lies between
// "$(" and the next ")" is the name, as in kubelet: a shell's
// $(hostname) is a reference to an undefined variable, so it survives.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(s); cursor++ {
		if s[cursor] != '$' || cursor+1 >= len(s) {
			continue
		}
		b.WriteString(s[checkpoint:cursor])
		switch rest := s[cursor+1:]; rest[0] {
		case '$': // an escaped $
			b.WriteByte('$')
		case '(':
			end := strings.IndexByte(rest, ')')
			if end < 0 { // unclosed: "$(" as written, the rest read on
				b.WriteString("$(")
				break
			}
			name := rest[1:end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			cursor += end
		default: // not an expression: the $ and the byte after it
			b.WriteString(s[cursor : cursor+2])
		}
		cursor++
		checkpoint = cursor + 1
	}
	return b.String() + s[checkpoint:]
}

// escapeExpansion is s written so that expand gives s back whatever is
// defined: a $ that expand would read as the start of "$$" or "$(" is
// doubled. Export writes every command and env value through it, so that
// what podsup runs is what a Pod's container runs.
func escapeExpansion(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] == '$' && i+1 < len(s) && (s[i+1] == '$' || s[i+1] == '(') {
			b.WriteByte('$')
		}
	}
	return b.String()
}
