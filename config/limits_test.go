package config

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// deep is n levels of each construct HCL's parser recurses through. Each
// of these crashes a parser without checkLimits (Go's stack overflow is
// fatal): at 100,000 levels they must be refused with an error instead.
func deepInputs(n int) map[string]string {
	r := strings.Repeat
	return map[string]string{
		"brackets":     "x = " + r("[", n) + r("]", n) + "\n",
		"braces":       "x = " + r("{a = ", n) + "1" + r("}", n) + "\n",
		"parentheses":  "x = " + r("(", n) + "1" + r(")", n) + "\n",
		"blocks":       r("b {\n", n) + r("}\n", n),
		"unary not":    "x = " + r("!", n) + "true\n",
		"unary minus":  "x = " + r("-", n) + "1\n",
		"conditionals": "x = " + r("true ? 1 : ", n) + "2\n",
		"binary chain": "x = 1" + r(" + 1", n) + "\n",
		"index chain":  "x = f()" + r("[0]", n) + "\n",
		"calls":        "x = " + r("f(", n) + r(")", n) + "\n",
		"templates":    "x = " + r(`"${`, n) + "1" + r(`}"`, n) + "\n",
		"directives":   `x = "` + r("%{if true}", n) + r("%{endif}", n) + "\"\n",
		"heredocs":     "x = " + r("<<EOT\n${", n) + "1" + r("}\nEOT\n", n),
		"in a comment": "/* */ x = [\n" + r("[", n) + "\n",
	}
}

func TestParseRefusesDeepNestingWithAnError(t *testing.T) {
	t.Parallel()
	for name, src := range deepInputs(100_000) {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			e := mustFail(t, src)
			if len(e.Diagnostics) != 1 || e.Diagnostics[0].Summary != "Configuration nested too deeply" {
				t.Fatalf("want one nesting error, got:\n%v", e)
			}
			if got := e.Error(); !strings.HasPrefix(got, "test.hcl:") || !strings.Contains(got, "more than 100 levels") {
				t.Fatalf("the error does not name file:line:col and the limit: %s", got)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("refusing took %v", d)
			}
		})
	}
}

func TestParseAcceptsNestingUpToTheLimitOutsideCode(t *testing.T) {
	t.Parallel()
	// Brackets in strings, heredocs and comments are text, not nesting.
	deep := strings.Repeat("[", 100_000)
	for name, value := range map[string]string{
		"string":        `"` + deep + `"`,
		"escaped quote": `"\"` + deep + `"`,
		"escaped ${":    `"$${` + deep + `"`,
		"heredoc":       "<<EOT\n" + deep + "\n  EOT",
	} {
		t.Run(name, func(t *testing.T) {
			// The only problem is that x is not an argument podsup knows.
			e := mustFail(t, minimal+"x = "+value+"\n")
			if len(e.Diagnostics) != 1 || e.Diagnostics[0].Summary != "Unsupported argument" {
				t.Fatalf("want only the unsupported argument, got:\n%v", e)
			}
		})
	}
	for name, comment := range map[string]string{
		"line comment":  "# " + deep,
		"// comment":    "// " + deep,
		"block comment": "/*\n" + deep + "\n*/",
	} {
		t.Run(name, func(t *testing.T) { mustParse(t, minimal+comment+"\n") })
	}
	// And a realistic nesting parses.
	mustParse(t, `
group "web" {
  process "api" {
    command = ["sh", "-c", "echo ${env("HOME", "/")} %{if true}[{(${"x"})}]%{endif}"]
    env     = { A = "${"${"${"b"}"}"}" }
    readiness_probe {
      http_get {
        port    = 8080
        headers = { "X-A" = <<EOT
  [[[ ${"y"} ]]]
  EOT
        }
      }
    }
  }
}
`)
}

func TestParseRefusesOversizedAndOverlongFiles(t *testing.T) {
	t.Parallel()
	start := time.Now()
	big := bytes.Repeat([]byte("#\n"), MaxFileSize/2+1)
	_, err := Parse(big, "big.hcl")
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "big.hcl:1:1: Configuration file too large") || !strings.Contains(err.Error(), "16 MiB") {
		t.Fatalf("an oversized file: %v", err)
	}
	// Within the size, but each byte a token: HCL would take ~100 bytes
	// and more per token.
	long := bytes.Repeat([]byte("\n"), MaxTokens+10)
	_, err = Parse(long, "long.hcl")
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "long.hcl:2000002:1: Configuration file too long") {
		t.Fatalf("a file of too many tokens: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("refusing took %v", d)
	}
}

func TestLoadRefusesOversizedFilesWithoutReadingThem(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "huge.hcl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: a 1 GiB file that costs no disk, and would cost podsup
	// gigabytes if it were read.
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = Load(path)
	if err == nil || !strings.Contains(err.Error(), path+":1:1: Configuration file too large: The file has 1024 MiB") {
		t.Fatalf("Load of a 1 GiB file: %v", err)
	}
	// A device never ends: Load does not read it.
	_, err = Load("/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "/dev/zero:1:1: Configuration file is not a regular file: This is a character device") {
		t.Fatalf("Load of /dev/zero: %v", err)
	}
}

func TestTenThousandGroupsPassTheLimits(t *testing.T) {
	t.Parallel()
	src := manyGroups(10_000)
	if len(src) > MaxFileSize/2 {
		t.Errorf("10,000 groups take %d bytes, more than half of MaxFileSize", len(src))
	}
	s := nestingScanner{src: src}
	if err := s.scan(); err != nil || s.tokens > MaxTokens/2 {
		t.Errorf("10,000 groups: %v, %d tokens (limit %d)", err, s.tokens, MaxTokens)
	}
	// Parsing all of them takes seconds (more under -race): 1,000 show
	// that the file decodes.
	if cfg := mustParse(t, string(manyGroups(1_000))); len(cfg.Groups) != 1_000 {
		t.Fatalf("loaded %d groups", len(cfg.Groups))
	}
}

// manyGroups is a realistic large file: n groups of one process with a
// probe, as README's limits were measured with.
func manyGroups(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		name := "svc-" + strings.Repeat("0", 5-len(itoa(i))) + itoa(i)
		port := itoa(8000 + i%1000)
		b.WriteString(`group "` + name + `" {
  restart_policy           = "always"
  termination_grace_period = "10s"

  process "server" {
    command     = ["/usr/local/bin/server", "--port", "` + port + `", "--name", "` + name + `"]
    env         = { LOG_LEVEL = "info", REGION = "eu-west-1" }
    stop_signal = "SIGTERM"

    liveness_probe {
      http_get {
        port = ` + port + `
        path = "/healthz"
      }
      period = "5s"
    }
  }
}

`)
	}
	return b.Bytes()
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + itoa(i%10)
}

// referenceDepth is the nesting measure of checkLimits computed on the
// tokens of HCL's own scanner, counting only the operators that make its
// parser recurse. The nesting scanner must never see less.
func referenceDepth(src []byte) (int, bool) {
	toks, diags := hclsyntax.LexConfig(src, "ref.hcl", hcl.InitialPos)
	if diags.HasErrors() && len(toks) == 0 {
		return 0, false
	}
	var s nestingScanner // only its level bookkeeping
	seqKeyword := false
	for _, tok := range toks {
		switch tok.Type {
		case hclsyntax.TokenOBrace:
			s.open('{')
		case hclsyntax.TokenOBrack:
			s.open('[')
		case hclsyntax.TokenOParen:
			s.open('(')
		case hclsyntax.TokenOQuote:
			s.open('"')
		case hclsyntax.TokenOHeredoc:
			s.open('h')
		case hclsyntax.TokenTemplateInterp:
			s.open('$')
		case hclsyntax.TokenTemplateControl:
			s.open('%')
			seqKeyword = true
			continue
		case hclsyntax.TokenCBrace:
			s.closeLevel('{')
		case hclsyntax.TokenCBrack:
			s.closeLevel('[')
		case hclsyntax.TokenCParen:
			s.closeLevel('(')
		case hclsyntax.TokenCQuote:
			s.closeThrough('"')
		case hclsyntax.TokenCHeredoc:
			s.closeThrough('h')
		case hclsyntax.TokenTemplateSeqEnd:
			if k := s.sequenceLevel(); k != 0 {
				s.directive(s.closeThrough(k))
			}
		case hclsyntax.TokenComma, hclsyntax.TokenEqual:
			s.reset()
		case hclsyntax.TokenNewline:
			s.lineEnd()
		case hclsyntax.TokenComment:
			if bytes.HasSuffix(tok.Bytes, []byte("\n")) {
				s.lineEnd()
			}
		case hclsyntax.TokenIdent:
			if seqKeyword {
				s.levels[len(s.levels)-1].keyword = string(tok.Bytes)
			}
		case hclsyntax.TokenPlus, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenSlash,
			hclsyntax.TokenPercent, hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual,
			hclsyntax.TokenLessThan, hclsyntax.TokenLessThanEq, hclsyntax.TokenGreaterThan,
			hclsyntax.TokenGreaterThanEq, hclsyntax.TokenAnd, hclsyntax.TokenOr, hclsyntax.TokenBang,
			hclsyntax.TokenQuestion, hclsyntax.TokenDot, hclsyntax.TokenEllipsis:
			s.weigh()
		}
		seqKeyword = false
	}
	return s.maxDepth, true
}

func TestNestingScannerSeesAtLeastHCLsDepth(t *testing.T) {
	t.Parallel()
	for _, n := range []int{3, 30, 60} {
		for name, src := range deepInputs(n) {
			ref, _ := referenceDepth([]byte(src))
			s := nestingScanner{src: []byte(src)}
			err := s.scan()
			if err == nil && s.maxDepth < ref || err != nil && ref <= MaxNesting {
				t.Errorf("%s x %d: scanner depth %d (%v), HCL's tokens %d (limit %d)", name, n, s.maxDepth, err, ref, MaxNesting)
			}
		}
	}
}

// FuzzLoad feeds arbitrary bytes to the configuration decoder: it must
// never panic, every refusal must be a *Error with at least one
// positioned diagnostic, and the nesting scanner must never see less
// depth than HCL's own tokens show (else a crafted file could reach the
// parser's fatal recursion).
func FuzzLoad(f *testing.F) {
	for _, s := range []string{minimal, `x = "${a}%{if b}c%{endif}"`, "x = <<-EOT\n  ${\"y\"}\n  EOT\n",
		"x = [(1 + -2) * !a ? b : c]", "/* [ */ x = \"[\" # [\n", `x = "$${[" + "%%{["`, "a = <<EOT\nEOT",
		"variable \"v\" { default = [1] }\ngroup \"g\" {\n  env_file = [\"-a.env\", var.v]\n  process \"p\" {\n    command = [var.v]\n    env_file = \"x\"\n  }\n}\n",
		// What validate refuses because it could never run (issue #25).
		"group \"g\" {\n  env = { \"A=B\" = \"c\" }\n  process \"p\" {\n    command = [\"a\\u0000b\"]\n    env = { K = \"v\\u0000\" }\n  }\n}\n",
		"group \"g\" {\n  sandbox {\n    resources {\n      cpu = 1e308\n      pids = 1e15\n    }\n  }\n  process \"p\" {\n    command = [\"x\"]\n    liveness_probe {\n      failure_threshold = 1e15\n      exec { command = [\"x\"] }\n    }\n  }\n}\n",
		"supervisor { log_dir = \"/dev/null\" }\ngroup \"g\" {\n  sandbox {\n    resources { memory = \"1Q\" }\n  }\n  process \"p\" { command = [\"x\"] }\n}\n",
		"x = 1\ngroup \"a\" {\n}\nx = 2\n\ngroup \"b\" { process \"p\" { command = [\"x\"] } }\n"} {
		f.Add([]byte(s))
	}
	for _, src := range deepInputs(3) {
		f.Add([]byte(src))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		s := nestingScanner{src: src, chunk: 1}
		scanErr := s.utf8()
		if scanErr == nil {
			scanErr = s.scan()
		}
		if ref, ok := referenceDepth(src); ok && s.maxDepth < ref && scanErr == nil {
			t.Fatalf("the scanner saw depth %d where HCL's tokens nest %d: %q", s.maxDepth, ref, src)
		}
		// Parsed a top-level item at a time (parseFile's chunks), a file
		// is valid exactly when it is valid parsed whole, with the same
		// blocks.
		if scanErr == nil {
			whole, wd := hclsyntax.ParseConfig(src, "fuzz.hcl", hcl.InitialPos)
			chunked, cd := parseFile(src, "fuzz.hcl", s.splits)
			if wd.HasErrors() != cd.HasErrors() {
				t.Fatalf("parsed whole: %v; in chunks: %v: %q", wd, cd, src)
			}
			if !wd.HasErrors() {
				wb, cb := whole.Body.(*hclsyntax.Body), chunked.Body.(*hclsyntax.Body)
				if len(wb.Blocks) != len(cb.Blocks) || len(wb.Attributes) != len(cb.Attributes) {
					t.Fatalf("parsed whole: %d blocks, %d attributes; in chunks: %d, %d: %q", len(wb.Blocks), len(wb.Attributes), len(cb.Blocks), len(cb.Attributes), src)
				}
				for i := range wb.Blocks {
					if wb.Blocks[i].Range() != cb.Blocks[i].Range() {
						t.Fatalf("block %d at %v whole, %v in chunks: %q", i, wb.Blocks[i].Range(), cb.Blocks[i].Range(), src)
					}
				}
			}
		}
		// No env file is read: the input could name any file, a device too.
		noFiles := func(string) ([]byte, error) { return nil, fs.ErrNotExist }
		_, err := Options{LookupEnv: noEnv, readEnvFile: noFiles}.parse([]source{{name: "fuzz.hcl", src: src}})
		if err == nil {
			return
		}
		var ce *Error
		if !errors.As(err, &ce) || len(ce.Diagnostics) == 0 {
			t.Fatalf("a refusal without diagnostics: %v (%T)", err, err)
		}
		for _, d := range ce.Diagnostics {
			if d.Severity == hcl.DiagError && (d.Summary == "" || !utf8.ValidString(d.Summary)) {
				t.Fatalf("an unclear diagnostic: %#v", d)
			}
		}
		var b bytes.Buffer
		if err := ce.WriteText(&b, false); err != nil {
			t.Fatalf("writing the diagnostics: %v", err)
		}
	})
}
