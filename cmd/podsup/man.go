package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The man pages: podsup(1) and podsup-COMMAND(1) from the command tree
// itself, podsup.hcl(5) from the configuration reference (docs/config.md,
// which a test in package config keeps equal to the decoder's schema). The
// pages are checked in under man/, and TestManPagesAreCurrent fails when
// they differ from what this generates; scripts/install-man installs them.

func newGenManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-man DIR CONFIG_REFERENCE",
		Short:  "Write podsup's man pages to DIR (for packagers: see scripts/install-man)",
		Hidden: true,
		Args:   cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := os.ReadFile(args[1])
			if err != nil {
				return err
			}
			pages, err := manPages(cmd.Root(), string(ref))
			if err != nil {
				return err
			}
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			for name, text := range pages {
				if err := os.WriteFile(filepath.Join(args[0], name), []byte(text), 0o644); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// manPages returns every page by file name.
func manPages(root *cobra.Command, configReference string) (map[string]string, error) {
	pages := map[string]string{}
	root.InitDefaultVersionFlag() // as Execute does, so the pages do not depend on it
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" && c.HasParent() {
			return
		}
		c.InitDefaultHelpFlag()
		pages[manName(c)+".1"] = commandPage(c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	cfg, err := configPage(configReference)
	if err != nil {
		return nil, err
	}
	pages["podsup.hcl.5"] = cfg
	return pages, nil
}

func manName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}

// roff escapes text for a man page: backslashes, and a dot or quote that
// would start a request.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			l = `\&` + l
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func commandPage(c *cobra.Command) string {
	var b strings.Builder
	name := manName(c)
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"podsup\" \"podsup manual\"\n", strings.ToUpper(name))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", name, roff(c.Short))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.nf\n%s\n.fi\n", roff(c.UseLine()))
	long := c.Long
	if long == "" {
		long = c.Short
	}
	fmt.Fprintf(&b, ".SH DESCRIPTION\n.nf\n%s\n.fi\n", roff(long))
	writeFlags(&b, "OPTIONS", c.NonInheritedFlags())
	writeFlags(&b, "GLOBAL OPTIONS", c.InheritedFlags())
	if c.Example != "" {
		fmt.Fprintf(&b, ".SH EXAMPLES\n.nf\n%s\n.fi\n", roff(c.Example))
	}
	var see []string
	if c.HasParent() {
		see = append(see, manName(c.Parent())+"(1)")
	}
	for _, sub := range c.Commands() {
		if !sub.Hidden && sub.Name() != "help" && sub.Name() != "completion" {
			see = append(see, manName(sub)+"(1)")
		}
	}
	if !c.HasParent() {
		see = append(see, "podsup.hcl(5)")
	}
	sort.Strings(see)
	fmt.Fprintf(&b, ".SH SEE ALSO\n%s\n", strings.Join(see, ", "))
	return b.String()
}

func writeFlags(b *strings.Builder, title string, fs *pflag.FlagSet) {
	var rows []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" || f.Name == "version" {
			return
		}
		head := `\fB\-\-` + f.Name + `\fR`
		if f.Shorthand != "" {
			head = `\fB\-` + f.Shorthand + `\fR, ` + head
		}
		if f.Value.Type() != "bool" {
			head += " " + f.Value.Type()
		}
		usage := f.Usage
		// The socket's default depends on who runs podsup (its usage says).
		if f.Name != "socket" && f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" && f.DefValue != "0s" {
			usage += " (default " + f.DefValue + ")"
		}
		rows = append(rows, ".TP\n"+head+"\n"+roff(usage))
	})
	if len(rows) > 0 {
		fmt.Fprintf(b, ".SH %s\n%s\n", title, strings.Join(rows, "\n"))
	}
}

var (
	mdHeading = regexp.MustCompile(`^(#+) (.*)$`)
	mdCode    = regexp.MustCompile("`([^`]*)`")
	mdLink    = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	mdBold    = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	mdItem    = regexp.MustCompile(`^(-|[0-9]+\.) (.*)$`)
)

// inline turns markdown's code spans and links into roff.
func inline(s string) string {
	s = mdLink.ReplaceAllString(s, "$1")
	s = roff(s)
	s = mdBold.ReplaceAllString(s, `\fB$1\fR`)
	return mdCode.ReplaceAllString(s, `\fB$1\fR`)
}

// configPage is podsup.hcl(5): docs/config.md with its sections as
// sections and each table row as a tagged paragraph.
func configPage(md string) (string, error) {
	var b strings.Builder
	b.WriteString(".TH PODSUP.HCL 5 \"\" \"podsup\" \"podsup manual\"\n")
	b.WriteString(".SH NAME\npodsup.hcl \\- podsup's configuration file\n")
	tables := 0
	var para []string
	flush := func() {
		if len(para) > 0 {
			if !strings.HasSuffix(b.String(), " 4\n") {
				b.WriteString(".PP\n")
			}
			b.WriteString(inline(strings.Join(para, " ")) + "\n")
			para = nil
		}
	}
	code := false // inside a ``` block: kept line by line, as written
	for _, line := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			flush()
			if code {
				b.WriteString(".fi\n.RE\n")
			} else {
				b.WriteString(".PP\n.RS 4\n.nf\n")
			}
			code = !code
		case code:
			b.WriteString(roff(line) + "\n")
		case strings.HasPrefix(line, "<!--"):
		case mdHeading.MatchString(line):
			flush()
			m := mdHeading.FindStringSubmatch(line)
			if m[1] == "#" {
				b.WriteString(".SH DESCRIPTION\n")
				continue
			}
			title := strings.ReplaceAll(m[2], "`", "")
			if len(m[1]) > 2 {
				b.WriteString(".SS " + title + "\n")
				continue
			}
			b.WriteString(".SH " + strings.ToUpper(title) + "\n")
		case strings.HasPrefix(line, "|"):
			flush()
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			if len(cells) < 5 || cells[0] == "Field" || strings.HasPrefix(cells[0], "---") {
				continue
			}
			tables++
			fmt.Fprintf(&b, ".TP\n%s (%s", inline(cells[0]), inline(cells[1]))
			if cells[2] != "" {
				fmt.Fprintf(&b, "; default %s", inline(cells[2]))
			}
			b.WriteString(")\n" + inline(cells[3]))
			if cells[4] != "" {
				b.WriteString(". Follows " + inline(cells[4]))
			}
			b.WriteString(".\n")
		case strings.TrimSpace(line) == "":
			flush()
		case mdItem.MatchString(line):
			// A list item starts a paragraph of its own, tagged with its
			// bullet or number; its continuation lines join it.
			flush()
			m := mdItem.FindStringSubmatch(line)
			tag := m[1]
			if tag == "-" {
				tag = `\(bu`
			}
			b.WriteString(".IP " + tag + " 4\n")
			para = append(para, m[2])
		default:
			para = append(para, strings.TrimSpace(line))
		}
	}
	flush()
	if tables == 0 {
		return "", fmt.Errorf("the configuration reference has no field tables")
	}
	b.WriteString(".SH SEE ALSO\npodsup(1), podsup-up(1), podsup-validate(1)\n")
	return b.String(), nil
}
