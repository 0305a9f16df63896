package config

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// What a configuration file may cost, checked before HCL's parser sees
// it. HCL's parser recurses once per nesting level and per operator of a
// chain, and a Go stack overflow is fatal, not a panic: a file of 100,000
// nested brackets would kill podsup (and, on reload, orphan everything it
// runs). HCL also keeps a token of about 100 bytes, plus its syntax tree,
// for every name, number, operator and line end: a few MiB of newlines or
// of "1," cost gigabytes and minutes. The figures are in README.md's
// "Limits" section.
const (
	// MaxFileSize is the largest file podsup reads: a 10,000-group file
	// with a probe per process is about 4 MiB.
	MaxFileSize = 16 << 20
	// MaxConfigSize bounds the bytes of a whole configuration: every file
	// of every -f and conf.d, and the --var-files, together. The per-file
	// limit alone let five 16 MiB files through.
	MaxConfigSize = 16 << 20
	// MaxFiles bounds the files of a configuration (-f files, the *.hcl of
	// its conf.d directories and the --var-files): each costs an open and
	// a parse, and a directory of a million empty files would be read at
	// every reload.
	MaxFiles = 1000
	// MaxTokens bounds the names, numbers, operators, line ends and string
	// pieces of a whole configuration, over all its files: that
	// 10,000-group file has about 0.9 million.
	MaxTokens = 2_000_000
	// MaxNesting bounds the nesting of a file. Each bracket, brace,
	// parenthesis, string template and template directive is a level, and
	// so is every operator of a chain such as !!x or a ? b : c ? d : e
	// (until a comma, an `=` or, in a block, a line end). Real files stay
	// under 20.
	MaxNesting = 100
	// MaxGroups and MaxProcesses bound what a configuration runs: podsup
	// is measured with 10,000 processes (docs/benchmarks.md), and each
	// process costs it goroutines, fds and a cgroup. Init processes count
	// as processes.
	MaxGroups    = 10_000
	MaxProcesses = 10_000
)

// checkLimits refuses src before it is parsed when it is larger, longer or
// deeper than the limits above, with a diagnostic at the place (or for the
// size, the file) that crosses the limit. tokensBefore is the tokens of
// the configuration's files before this one: MaxTokens bounds them all.
// It returns the file's tokens and, with chunk > 0, the offsets about
// chunk bytes apart where a top-level item has ended (nestingScanner's
// splits), for parseFile: the same scan finds both.
func checkLimits(src []byte, filename string, tokensBefore, chunk int) (hcl.Diagnostics, int, []int) {
	if len(src) > MaxFileSize {
		return hcl.Diagnostics{tooLarge(filename, byteCount(int64(len(src))))}, 0, nil
	}
	s := nestingScanner{src: src, tokensBefore: tokensBefore, chunk: chunk}
	err := s.utf8()
	if err == nil {
		err = s.scan()
	}
	if err != nil {
		r := s.rangeAt(filename, err.at)
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  err.summary,
			Detail:   err.detail,
			Subject:  &r,
		}}, s.tokens, nil
	}
	return nil, s.tokens, s.splits
}

// tooLarge is the diagnostic for a file over MaxFileSize; size says how
// large it is.
func tooLarge(filename string, size string) *hcl.Diagnostic {
	r := hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Configuration file too large",
		Detail: fmt.Sprintf("The file has %s; podsup reads configuration files of at most %s (10,000 groups take about 4 MiB). Is this the right file?",
			size, byteCount(MaxFileSize)),
		Subject: &r,
	}
}

// configTooLarge is the diagnostic for a configuration whose files
// together hold more than MaxConfigSize bytes, at the file that crosses
// it: total is what podsup found in nfiles files ("more than 16 MiB" when
// a file grew while it was read).
func configTooLarge(filename string, nfiles int, total string) *hcl.Diagnostic {
	r := hcl.Range{Filename: filename, Start: hcl.InitialPos, End: hcl.InitialPos}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Configuration too large",
		Detail: fmt.Sprintf("The configuration's %d files hold %s in all, and this one takes them past the limit: podsup reads at most %s over all the files of a configuration (every -f, conf.d and --var-file; 10,000 groups take about 4 MiB). Are the right files named?",
			nfiles, total, byteCount(MaxConfigSize)),
		Subject: &r,
	}
}

// byteCount is n bytes for a person: "80 MiB", "5.5 MiB (5767168 bytes)",
// "4096 bytes".
func byteCount(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// utf8 refuses a file that is not UTF-8 text. HCL's scanner reads a
// broken sequence's lead byte together with the ASCII bytes after it, so a
// quote or bracket there would mean one thing to it and another to this
// scanner.
func (s *nestingScanner) utf8() *limitError {
	if utf8.Valid(s.src) {
		return nil
	}
	for i := 0; i < len(s.src); {
		r, n := utf8.DecodeRune(s.src[i:])
		if r == utf8.RuneError && n <= 1 {
			return &limitError{at: i, summary: "Invalid UTF-8",
				detail: fmt.Sprintf("A configuration file must be UTF-8 text; the byte 0x%02x here is not part of a UTF-8 character.", s.src[i])}
		}
		i += n
	}
	return nil
}

// limitError is where and why the scan stopped.
type limitError struct {
	at              int // byte offset
	summary, detail string
}

// The scanner's lexical modes: HCL code, a quoted template ("..."), a
// heredoc template (<<EOT ... EOT).
type scanMode struct {
	kind   byte // 'c' code, 'q' quoted, 'h' heredoc
	marker []byte
	// startOfLine: the heredoc is at the start of a line that began in
	// heredoc text, where its closing marker may stand.
	startOfLine bool
}

// A nesting level: what opened it and the operators chained in it.
type level struct {
	kind   byte // '{', '[', '(', '"' quoted, 'h' heredoc, '$' ${, '%' %{, 'd' %{if}/%{for} body
	weight int
	// For '%' levels: the directive's keyword, once its first word is read.
	keyword string
	sawWord bool
}

// nestingScanner follows HCL's lexical structure (hclsyntax's scanner:
// comments, quoted and heredoc templates with their ${ } and %{ }
// sequences, the brace counting that ends them) closely enough to measure
// nesting and count tokens without allocating per token. Where it could
// disagree with HCL it errs towards deeper and longer: it must never
// report less nesting than HCL's parser will recurse through. FuzzLoad
// checks that against hclsyntax's own tokens.
type nestingScanner struct {
	src    []byte
	i      int
	modes  []scanMode
	levels []level
	// depth is len(levels) plus every level's weight (and top's).
	depth, top int
	maxDepth   int
	tokens     int
	// tokensBefore are the configuration's tokens in the files scanned
	// before this one.
	tokensBefore int
	// With chunk set, splits collects the offsets, chunk bytes or more
	// apart, where a top-level item has ended (parseFile's chunks).
	chunk  int
	splits []int
	// braces and retBraces are HCL's: a } at the brace count a template
	// sequence opened at ends that sequence.
	braces    int
	retBraces []int
}

func (s *nestingScanner) scan() *limitError {
	s.modes = []scanMode{{kind: 'c'}}
	for s.i < len(s.src) {
		var err *limitError
		switch m := &s.modes[len(s.modes)-1]; m.kind {
		case 'c':
			err = s.code()
		case 'q':
			err = s.quoted()
		default:
			err = s.heredoc(m)
		}
		if err != nil {
			return err
		}
		if s.tokensBefore+s.tokens > MaxTokens {
			if s.tokensBefore == 0 {
				return &limitError{at: s.i, summary: "Configuration file too long",
					detail: fmt.Sprintf("The file has more than %d tokens (names, numbers, operators, line ends and string pieces) by here; podsup reads at most %d (10,000 groups take about 0.9 million). Is this the right file?", MaxTokens, MaxTokens)}
			}
			return &limitError{at: s.i, summary: "Configuration too long",
				detail: fmt.Sprintf("The configuration's files have more than %d tokens (names, numbers, operators, line ends and string pieces) by here, %d of them in the files before this one; podsup reads at most %d over all the files of a configuration (10,000 groups take about 0.9 million). Are the right files named?", MaxTokens, s.tokensBefore, MaxTokens)}
		}
	}
	return nil
}

func (s *nestingScanner) tooDeep() *limitError {
	return &limitError{at: s.i, summary: "Configuration nested too deeply",
		detail: fmt.Sprintf("This is more than %d levels deep; podsup refuses deeper files. Each bracket, brace, parenthesis, string template and template directive is a level, and so is each operator of a chain such as !!x or a ? b : c ? d : e.", MaxNesting)}
}

// weigh adds an operator to the innermost level.
func (s *nestingScanner) weigh() *limitError {
	if n := len(s.levels); n > 0 {
		s.levels[n-1].weight++
	} else {
		s.top++
	}
	s.depth++
	return s.checkDepth()
}

func (s *nestingScanner) checkDepth() *limitError {
	if s.depth > s.maxDepth {
		s.maxDepth = s.depth
	}
	if s.depth > MaxNesting {
		return s.tooDeep()
	}
	return nil
}

// reset ends an expression at a comma, an = or a line end in a body: the
// operators before it no longer nest what follows.
func (s *nestingScanner) reset() {
	if n := len(s.levels); n > 0 {
		s.depth -= s.levels[n-1].weight
		s.levels[n-1].weight = 0
	} else {
		s.depth -= s.top
		s.top = 0
	}
}

// open starts a level. In code the opener also weighs on the enclosing
// level (f(x)[0] chains calls and indexes); a template's ${ } and %{ }
// sequences follow each other flat.
func (s *nestingScanner) open(kind byte) *limitError {
	if s.inCode() {
		if err := s.weigh(); err != nil {
			return err
		}
	}
	s.levels = append(s.levels, level{kind: kind})
	s.depth++
	return s.checkDepth()
}

func (s *nestingScanner) inCode() bool {
	n := len(s.levels)
	return n == 0 || s.levels[n-1].kind != '"' && s.levels[n-1].kind != 'h' && s.levels[n-1].kind != 'd'
}

// closeLevel ends the innermost level when it is of kind; an unmatched
// closer is a syntax error HCL reports, and leaving the level open only
// overstates the depth.
func (s *nestingScanner) closeLevel(kind byte) level {
	n := len(s.levels)
	if n == 0 || s.levels[n-1].kind != kind {
		return level{}
	}
	l := s.levels[n-1]
	s.depth -= 1 + l.weight
	s.levels = s.levels[:n-1]
	return l
}

// closeThrough ends levels up to and including the innermost of kind: a
// template or sequence ends whatever was left open inside it.
func (s *nestingScanner) closeThrough(kind byte) level {
	for n := len(s.levels); n > 0; n-- {
		if s.levels[n-1].kind == kind {
			for len(s.levels) > n {
				s.closeLevel(s.levels[len(s.levels)-1].kind)
			}
			return s.closeLevel(kind)
		}
	}
	return level{}
}

// sawToken tells an open %{ sequence that its first token went by.
func (s *nestingScanner) sawToken(word string) {
	if n := len(s.levels); n > 0 && s.levels[n-1].kind == '%' && !s.levels[n-1].sawWord {
		s.levels[n-1].sawWord = true
		s.levels[n-1].keyword = word
	}
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= utf8.RuneSelf
}

// code scans one token of HCL code.
func (s *nestingScanner) code() *limitError {
	src, c := s.src, s.src[s.i]
	next := byte(0)
	if s.i+1 < len(src) {
		next = src[s.i+1]
	}
	if c == ' ' || c == '\t' || c == '\r' {
		s.i++
		return nil
	}
	s.tokens++
	switch {
	case c == '\n':
		s.i++
		s.lineEnd()
		return nil
	case c == '#' || c == '/' && next == '/':
		s.lineComment()
		return nil
	case c == '/' && next == '*':
		if end := bytes.Index(src[s.i+2:], []byte("*/")); end >= 0 {
			s.i += 2 + end + 2
			return nil
		}
		// Unterminated: HCL reads a / and a * and goes on with code.
	case c == '"':
		s.sawToken("")
		s.i++
		s.modes = append(s.modes, scanMode{kind: 'q'})
		return s.open('"')
	case c == '<' && next == '<':
		if ok, err := s.heredocStart(); ok || err != nil {
			return err
		}
	case c == '{':
		s.sawToken("")
		s.i++
		s.braces++
		return s.open('{')
	case c == '}':
		s.i++
		s.closeBrace()
		return nil
	case c == '~' && next == '}':
		s.i += 2
		s.closeBrace()
		return nil
	case c == '[' || c == '(':
		s.sawToken("")
		s.i++
		return s.open(c)
	case c == ']':
		s.i++
		s.closeLevel('[')
		return nil
	case c == ')':
		s.i++
		s.closeLevel('(')
		return nil
	case c == ',':
		s.i++
		s.reset()
		return nil
	case c == '=' && next != '=' && next != '>':
		s.sawToken("")
		s.i++
		s.reset()
		return nil
	case isWordByte(c):
		s.word()
		return nil
	}
	s.sawToken("")
	s.i++
	if !isOperator(c) {
		return nil
	}
	// An operator may chain; the two-byte ones (==, !=, <=, >=, &&, ||,
	// =>) weigh once.
	if next == '=' && strings.IndexByte("=!<>", c) >= 0 || next == c && (c == '&' || c == '|') || c == '=' && next == '>' {
		s.i++
	}
	return s.weigh()
}

// isOperator reports whether c begins one of HCL's operators, which its
// parser recurses through: unary ! and -, the binary operators, ? of a
// conditional, . and [ of a traversal.
func isOperator(c byte) bool {
	return strings.IndexByte("+-*/%<>!&|?.=", c) >= 0
}

// lineEnd is a newline in code, just before s.i: in a body or an object
// (a brace level, or the top), it ends the attribute and its operator
// chain. At the top, with nothing open, a top-level item has ended.
func (s *nestingScanner) lineEnd() {
	n := len(s.levels)
	if n == 0 || s.levels[n-1].kind == '{' {
		s.reset()
	}
	if s.chunk > 0 && n == 0 && len(s.modes) == 1 && s.braces == 0 && len(s.retBraces) == 0 && s.i < len(s.src) {
		last := 0
		if k := len(s.splits); k > 0 {
			last = s.splits[k-1]
		}
		if s.i-last >= s.chunk && !bytes.HasPrefix(s.src[s.i:], []byte("\xef\xbb\xbf")) {
			s.splits = append(s.splits, s.i)
		}
	}
}

// lineComment skips # or // to the end of the line; HCL's parser reads the
// comment's newline as a line end.
func (s *nestingScanner) lineComment() {
	end := bytes.IndexByte(s.src[s.i:], '\n')
	if end < 0 {
		s.i = len(s.src)
		return
	}
	s.i += end + 1
	s.lineEnd()
}

// word scans a name (letters, digits, _ and -, as HCL's identifiers) or a
// number (1.5e-3, as HCL's: 1-2 is three tokens, a-b one, 1.a three).
//
// Only an ASCII name takes in a '-'. Whether a non-ASCII character is part
// of a name is Unicode's identifier classes, as HCL's lexer has them (a
// character it does not know, such as an unassigned one, is a token of its
// own, and a '-' after it is a minus); rather than track those tables, the
// scanner stops a name at non-ASCII text and leaves the '-' after it to be
// weighed as an operator. Seeing a level too many is safe (a refusal only
// past MaxNesting); seeing one too few is not.
func (s *nestingScanner) word() {
	start := s.i
	switch c := s.src[s.i]; {
	case c >= '0' && c <= '9':
		s.number()
	case c < utf8.RuneSelf:
		for s.i < len(s.src) && s.src[s.i] < utf8.RuneSelf && (isWordByte(s.src[s.i]) || s.src[s.i] == '-') {
			s.i++
		}
	default:
		for s.i < len(s.src) && isWordByte(s.src[s.i]) {
			s.i++
		}
	}
	s.sawToken(string(s.src[start:s.i]))
}

func (s *nestingScanner) number() {
	digitAt := func(i int) bool { return i < len(s.src) && s.src[i] >= '0' && s.src[i] <= '9' }
	for s.i < len(s.src) {
		switch c := s.src[s.i]; {
		case digitAt(s.i):
			s.i++
		case c == '.' && digitAt(s.i+1):
			s.i += 2
		case (c == 'e' || c == 'E') && digitAt(s.i+1):
			s.i += 2
		case (c == 'e' || c == 'E') && s.i+1 < len(s.src) && (s.src[s.i+1] == '+' || s.src[s.i+1] == '-') && digitAt(s.i+2):
			s.i += 3
		default:
			return
		}
	}
}

// heredocStart reads <<EOT or <<-EOT and a newline, as HCL does, and enters
// the heredoc. A marker with non-ASCII letters is refused: whether HCL
// takes it for a marker depends on Unicode tables this scanner does not
// carry, and guessing wrong could hide brackets from it.
func (s *nestingScanner) heredocStart() (bool, *limitError) {
	j := s.i + 2
	if j < len(s.src) && s.src[j] == '-' {
		j++
	}
	start := j
	for j < len(s.src) && (isWordByte(s.src[j]) || j > start && s.src[j] == '-') {
		if s.src[j] >= utf8.RuneSelf {
			return false, &limitError{at: s.i, summary: "Unsupported heredoc marker",
				detail: "podsup takes heredoc markers of ASCII letters, digits, _ and - only, e.g. <<EOT."}
		}
		j++
	}
	if j == start || s.src[start] >= '0' && s.src[start] <= '9' {
		return false, nil
	}
	marker := s.src[start:j]
	if j < len(s.src) && s.src[j] == '\r' {
		j++
	}
	if j >= len(s.src) || s.src[j] != '\n' {
		return false, nil
	}
	s.sawToken("")
	s.i = j + 1
	s.modes = append(s.modes, scanMode{kind: 'h', marker: marker, startOfLine: true})
	return true, s.open('h')
}

// closeBrace is } (or ~}): it ends a ${ } or %{ } sequence when the brace
// count is back where the sequence began, else a brace level.
func (s *nestingScanner) closeBrace() {
	if n := len(s.retBraces); n > 0 && s.retBraces[n-1] == s.braces {
		s.braces--
		s.retBraces = s.retBraces[:n-1]
		s.modes = s.modes[:len(s.modes)-1]
		if k := s.sequenceLevel(); k != 0 {
			s.directive(s.closeThrough(k))
		}
		return
	}
	s.braces--
	s.closeLevel('{')
}

// sequenceLevel is the kind of the innermost open ${ or %{ level.
func (s *nestingScanner) sequenceLevel() byte {
	for n := len(s.levels); n > 0; n-- {
		if k := s.levels[n-1].kind; k == '$' || k == '%' {
			return k
		}
	}
	return 0
}

// directive opens the body of a %{if} or %{for} that just ended, and
// closes it at %{endif} or %{endfor}: the parser nests them.
func (s *nestingScanner) directive(seq level) {
	switch seq.keyword {
	case "if", "for":
		s.levels = append(s.levels, level{kind: 'd'})
		s.depth++
	case "endif", "endfor":
		s.closeLevel('d')
	}
}

// sequence enters a ${ or %{ at s.i.
func (s *nestingScanner) sequence(kind byte) *limitError {
	s.tokens++
	s.i += 2
	if s.i < len(s.src) && s.src[s.i] == '~' {
		s.i++
	}
	s.braces++
	s.retBraces = append(s.retBraces, s.braces)
	s.modes = append(s.modes, scanMode{kind: 'c'})
	return s.open(kind)
}

// templateByte handles $ and % in template text: ${ and %{ open a
// sequence, $${ and %%{ are literal.
func (s *nestingScanner) templateByte() *limitError {
	c := s.src[s.i]
	rest := s.src[s.i+1:]
	switch {
	case len(rest) > 0 && rest[0] == '{':
		return s.sequence(c)
	case len(rest) > 1 && rest[0] == c && rest[1] == '{':
		s.i += 3
	default:
		s.i++
	}
	s.tokens += 2 // HCL splits the text around a lone $ or %
	return nil
}

// quoted scans a quoted template's text up to its end, a sequence or a
// byte HCL splits at.
func (s *nestingScanner) quoted() *limitError {
	for s.i < len(s.src) {
		switch c := s.src[s.i]; c {
		case '"':
			s.i++
			s.tokens++
			s.modes = s.modes[:len(s.modes)-1]
			s.closeThrough('"')
			return nil
		case '\\':
			s.i += 2
		case '\n':
			s.i++
			s.tokens++
		case '$', '%':
			return s.templateByte()
		default:
			s.i++
		}
	}
	return nil
}

// heredoc scans a heredoc's text a line at a time: a line that is only
// the marker (and spaces) ends it, when the line began in heredoc text.
func (s *nestingScanner) heredoc(m *scanMode) *limitError {
	if m.startOfLine {
		if end := bytes.IndexByte(s.src[s.i:], '\n'); end >= 0 && bytes.Equal(bytes.TrimSpace(s.src[s.i:s.i+end]), m.marker) {
			s.i += end // the newline is code's: it ends the attribute
			s.tokens++
			s.modes = s.modes[:len(s.modes)-1]
			s.closeThrough('h')
			return nil
		}
	}
	m.startOfLine = false
	for s.i < len(s.src) {
		switch s.src[s.i] {
		case '\n':
			s.i++
			s.tokens++
			m.startOfLine = true
			return nil
		case '$', '%':
			return s.templateByte()
		default:
			s.i++
		}
	}
	return nil
}

// rangeAt is the position of byte offset at, for a diagnostic.
func (s *nestingScanner) rangeAt(filename string, at int) hcl.Range {
	at = min(at, len(s.src))
	line := 1 + bytes.Count(s.src[:at], []byte("\n"))
	lineStart := bytes.LastIndexByte(s.src[:at], '\n') + 1
	pos := hcl.Pos{Line: line, Column: 1 + utf8.RuneCount(s.src[lineStart:at]), Byte: at}
	return hcl.Range{Filename: filename, Start: pos, End: pos}
}
