package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/podsup/podsup/logs"
	"github.com/podsup/podsup/spec"
	"github.com/podsup/podsup/systemd"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// referencePath is the configuration reference, which podsup.hcl(5) is made
// from.
const referencePath = "../docs/config.md"

var (
	schemaMarker = regexp.MustCompile(`^<!-- schema: ([a-z_-]+) -->$`)
	fieldRow     = regexp.MustCompile("^\\| `([a-z_]+)` \\|")
)

// referenceRow is one field's row of docs/config.md.
type referenceRow struct {
	name, typ, def string
	line           int
}

// readReference returns, for each table of docs/config.md bound to a
// schema by a "<!-- schema: NAME -->" line, the rows of its fields.
func readReference(t *testing.T) map[string][]referenceRow {
	t.Helper()
	b, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	tables := map[string][]referenceRow{}
	current := ""
	for i, line := range strings.Split(string(b), "\n") {
		if m := schemaMarker.FindStringSubmatch(line); m != nil {
			if _, dup := tables[m[1]]; dup {
				t.Errorf("%s:%d: two tables for the %s block", referencePath, i+1, m[1])
			}
			current = m[1]
			tables[current] = []referenceRow{}
			continue
		}
		if current == "" {
			continue
		}
		if m := fieldRow.FindStringSubmatch(line); m != nil {
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 5 {
				t.Errorf("%s:%d: the row of %s has %d cells, not 5 (Field, Type, Default, Meaning, Follows)", referencePath, i+1, m[1], len(cells))
				continue
			}
			tables[current] = append(tables[current], referenceRow{
				name: m[1], typ: strings.TrimSpace(cells[1]), def: strings.TrimSpace(cells[2]), line: i + 1,
			})
		} else if !strings.HasPrefix(line, "|") {
			if len(tables[current]) > 0 {
				current = "" // the table ended
			}
		}
	}
	return tables
}

// TestReferenceMatchesSchema: docs/config.md documents every field and
// nested block of every block the decoder accepts, and nothing else, each
// with the type the decoder reads it as and the default podsup applies.
//
// The names and the Type column come from the decoder itself: the names
// from the schema, a block's type from its header schema (labelled,
// repeatable), an argument's from the error the decoder gives for a value
// no type accepts (probeTypes). The Default column must equal
// referenceDefaults, whose entries are spec's (and logs', systemd's)
// default values rendered as the reference writes them, or a phrase where
// the default is not one value. A field added to the schema fails here
// until it has a row and a referenceDefaults entry; the message says what
// to write.
func TestReferenceMatchesSchema(t *testing.T) {
	t.Parallel()
	tables := readReference(t)
	if len(schemas) < 10 {
		t.Fatalf("only %d schemas registered: the test would check little", len(schemas))
	}
	seen := map[string]bool{}
	for _, s := range schemas {
		seen[s.name] = true
		types := probeTypes(t, s)
		documented, ok := tables[s.name]
		if !ok {
			t.Errorf("%s has no table for the %s block: add one under a \"<!-- schema: %s -->\" line", referencePath, s.name, s.name)
			continue
		}
		var fields []string
		for _, f := range schemaFields(s, types) {
			fields = append(fields, f.name)
			key := s.name + "." + f.name
			def, hasDef := referenceDefaults[key]
			if !hasDef {
				t.Errorf("the %s block's %s has no entry in referenceDefaults (config/reference_test.go): add %q: its default, e.g. dur(spec.DefaultX) or code(\"value\"), a phrase such as \"the group's\", or \"\" when it has none", s.name, f.name, key)
			}
			i := slices.IndexFunc(documented, func(r referenceRow) bool { return r.name == f.name })
			if i < 0 {
				t.Errorf("the %s block's %s is not in %s: add to its %s table the row\n\t| `%s` | %s | %s | WHAT IT DOES | WHAT IT FOLLOWS (Kubernetes, systemd, compose) |", s.name, f.name, referencePath, s.name, f.name, f.typ, def)
				continue
			}
			row := documented[i]
			if f.typ != "" && row.typ != f.typ { // "": probeTypes said why it could not tell
				t.Errorf("%s:%d: the %s block's %s is %q, but the decoder reads it as %q: write %q in the Type column", referencePath, row.line, s.name, f.name, row.typ, f.typ, f.typ)
			}
			if hasDef && row.def != def {
				t.Errorf("%s:%d: the %s block's %s defaults to %q, but podsup's default is %q: write %q in the Default column (or fix referenceDefaults if the default changed)", referencePath, row.line, s.name, f.name, row.def, def, def)
			}
		}
		for _, r := range documented {
			if !slices.Contains(fields, r.name) {
				t.Errorf("%s:%d: documents %s in the %s block, which the decoder does not accept", referencePath, r.line, r.name, s.name)
			}
		}
	}
	for name := range tables {
		if !seen[name] {
			t.Errorf("%s has a table for a %s block, which the decoder does not have", referencePath, name)
		}
	}
	for key := range referenceDefaults {
		name, field, _ := strings.Cut(key, ".")
		i := slices.IndexFunc(schemas, func(s *blockSchema) bool { return s.name == name })
		if i < 0 || !slices.Contains(fieldNames(schemas[i]), field) {
			t.Errorf("referenceDefaults has %q, which is not in the decoder's schema: remove it", key)
		}
	}
}

// schemaField is one field of a block as the reference should describe it.
type schemaField struct{ name, typ string }

func fieldNames(s *blockSchema) []string {
	var out []string
	for _, a := range s.schema.Attributes {
		out = append(out, a.Name)
	}
	for _, b := range s.schema.Blocks {
		out = append(out, b.Type)
	}
	return out
}

// schemaFields lists s's arguments, typed by types, then its blocks.
func schemaFields(s *blockSchema, types map[string]string) []schemaField {
	var out []schemaField
	for _, a := range s.schema.Attributes {
		out = append(out, schemaField{a.Name, types[a.Name]})
	}
	for _, b := range s.schema.Blocks {
		typ := "block"
		if len(b.LabelNames) > 0 {
			typ += ", labelled"
		}
		if !s.single[b.Type] {
			typ += ", repeatable"
		}
		out = append(out, schemaField{b.Type, typ})
	}
	return out
}

// probeTemplates place a block of each schema in a configuration, the
// probed argument at %s. A new block kind needs one.
var probeTemplates = map[string]string{
	"top-level":    "%s",
	"variable":     "variable \"v\" {\n%s\n}",
	"supervisor":   "supervisor {\n%s\n}",
	"backoff":      "backoff {\n%s\n}",
	"group":        "group \"g\" {\n%s\n}",
	"sandbox":      inGroup("sandbox {\n%s\n}"),
	"mount":        inGroup("sandbox {\nmount {\n%s\n}\n}"),
	"host_alias":   inGroup("sandbox {\nhost_alias {\n%s\n}\n}"),
	"dns":          inGroup("sandbox {\ndns {\n%s\n}\n}"),
	"volume":       inGroup("volume \"v\" {\n%s\n}"),
	"file":         inGroup("volume \"v\" {\nfile \"f\" {\n%s\n}\n}"),
	"volume_mount": inProcess("volume_mount {\n%s\n}"),
	"resources":    inGroup("sandbox {\nresources {\n%s\n}\n}"),
	"network":      inGroup("sandbox {\nnetwork {\n%s\n}\n}"),
	"port":         inGroup("sandbox {\nnetwork {\nport \"p\" {\n%s\n}\n}\n}"),
	"process":      inProcess("%s"),
	"log":          inProcess("log {\n%s\n}"),
	"probe":        inProcess("liveness_probe {\n%s\n}"),
	"hook":         inProcess("pre_stop {\n%s\n}"),
	"exec":         inProcess("liveness_probe {\nexec {\n%s\n}\n}"),
	"http_get":     inProcess("liveness_probe {\nhttp_get {\n%s\n}\n}"),
	"tcp_socket":   inProcess("liveness_probe {\ntcp_socket {\n%s\n}\n}"),
	"grpc":         inProcess("liveness_probe {\ngrpc {\n%s\n}\n}"),
	"sleep":        inProcess("pre_stop {\nsleep {\n%s\n}\n}"),
	"capabilities": inProcess("capabilities {\n%s\n}"),
	"rlimits":      inProcess("rlimits {\n%s\n}"),
	"depends_on":   inGroup("process \"q\" {\ncommand = [\"q\"]\n}\nprocess \"p\" {\ncommand = [\"p\"]\ndepends_on \"q\" {\n%s\n}\n}"),
}

func inGroup(s string) string   { return "group \"g\" {\n" + s + "\n}" }
func inProcess(s string) string { return inGroup("process \"p\" {\n" + s + "\n}") }

// decoderTypes maps the decoder's "NAME must be ..." messages to the
// reference's type names.
var decoderTypes = []struct{ says, typ string }{
	{"a string", "string"},
	{"a list of strings", "list"},
	{"a map of strings", "map"},
	{"true or false", "bool"},
	{"a number", "number"},
	{"a duration string", "duration"},
	{"a size", "size"},
	{"a limit", "limit"},
}

// probeTypes returns the type of each of s's arguments, as the decoder
// reads it: each is set, alone, to a list holding an object, which no
// type accepts, and the decoder's error names the type it wanted. An
// argument the decoder takes whatever its value is "any". A list argument
// that also takes a single string is "list or string". An argument is
// ", required" when the block without it is an error naming it, whether
// the schema or spec's validation says so.
func probeTypes(t *testing.T, s *blockSchema) map[string]string {
	t.Helper()
	out := map[string]string{}
	if len(s.schema.Attributes) == 0 {
		return out
	}
	tmpl, ok := probeTemplates[s.name]
	if !ok {
		t.Errorf("probeTemplates (config/reference_test.go) has no configuration for the %s block: add one that places it, with %%s inside it", s.name)
		return out
	}
	for _, a := range s.schema.Attributes {
		typ, err := typeOf(tmpl, a.Name, `[{}]`, true)
		if err != nil {
			t.Errorf("the %s block's %s: %v", s.name, a.Name, err)
			continue
		}
		if typ == "list" {
			if also, err := typeOf(tmpl, a.Name, `"x"`, false); err == nil && also == "any" {
				typ = "list or string"
			}
		}
		if isRequired(t, tmpl, a.Name) {
			typ += ", required"
		}
		out[a.Name] = typ
	}
	return out
}

// isRequired reports whether decoding tmpl's innermost block without name
// gives an error about name at that block: the line above %s.
func isRequired(t *testing.T, tmpl, name string) bool {
	t.Helper()
	header := strings.Count(tmpl[:strings.Index(tmpl, "%s")], "\n") // 1-based line of the block above %s
	_, err := parse([]byte(fmt.Sprintf(tmpl, "")), "probe.hcl", func(string) (string, bool) { return "", false })
	var cerr *Error
	if !errors.As(err, &cerr) {
		return false
	}
	for _, d := range cerr.Diagnostics {
		about := d.Summary == "Invalid "+name ||
			d.Summary == "Missing required argument" && strings.Contains(d.Detail, fmt.Sprintf("%q", name))
		if about && d.Subject != nil && d.Subject.Start.Line == header {
			return true
		}
	}
	return false
}

// typeOf decodes tmpl with name = value and returns the type the
// decoder's error asked for, or "any" when it gave no type error.
func typeOf(tmpl, name, value string, strict bool) (string, error) {
	src := fmt.Sprintf(tmpl, name+" = "+value)
	if _, diags := hclsyntax.ParseConfig([]byte(src), "probe.hcl", hcl.InitialPos); diags.HasErrors() {
		return "", fmt.Errorf("its probeTemplates configuration does not parse: %s", diags.Error())
	}
	_, err := parse([]byte(src), "probe.hcl", func(string) (string, bool) { return "", false })
	var cerr *Error
	if !errors.As(err, &cerr) {
		return "any", nil
	}
	prefix := name + " must be "
	for _, d := range cerr.Diagnostics {
		if d.Summary == "Unsupported argument" {
			return "", fmt.Errorf("its probeTemplates configuration puts it where the decoder does not take it: %s", d.Detail)
		}
		if !strings.HasPrefix(d.Detail, prefix) {
			continue
		}
		for _, dt := range decoderTypes {
			if strings.HasPrefix(d.Detail[len(prefix):], dt.says) {
				return dt.typ, nil
			}
		}
		return "", fmt.Errorf("the decoder says %q, a type decoderTypes (config/reference_test.go) does not know: add it", d.Detail)
	}
	// No type error: the value was taken. Strictly, only if no error of
	// another form points at the argument's line either (an error whose
	// type this test cannot tell); the "x" probe of a list is not strict,
	// as a path that does not exist is no type error.
	if !strict {
		return "any", nil
	}
	line := strings.Count(tmpl[:strings.Index(tmpl, "%s")], "\n") + 1
	for _, d := range cerr.Diagnostics {
		if d.Subject != nil && d.Subject.Start.Line == line {
			return "", fmt.Errorf("the decoder rejects %s = %s with %q, which does not say the type it wants: say \"%s must be ...\" as the decoder's other errors do, or teach typeOf (config/reference_test.go) this form", name, value, d.Summary+": "+d.Detail, name)
		}
	}
	return "any", nil
}

// referenceDefaults is each field's Default column: "BLOCK.FIELD" as the
// schema names them. Values come from the packages that apply them, so
// that changing a default there fails this test until the reference says
// so too; a phrase stands where the default is not one value.
var referenceDefaults = map[string]string{
	"top-level.supervisor": "",
	"top-level.backoff":    "kubelet's",
	"top-level.variable":   "",
	"top-level.group":      "",

	"variable.default":     "none: the variable must be set",
	"variable.description": "",

	"supervisor.socket":               code(spec.DefaultSocket) + " (root), `$XDG_RUNTIME_DIR/podsup.sock` or `/tmp/podsup-UID/podsup.sock` (others)",
	"supervisor.socket_group":         "",
	"supervisor.socket_group_roles":   code(`["read"]`),
	"supervisor.log_level":            code(zerolog.InfoLevel.String()),
	"supervisor.log_format":           code(logs.FormatConsole),
	"supervisor.log_dir":              "",
	"supervisor.minimum_grace":        dur(spec.DefaultMinimumGrace),
	"supervisor.notify_ready":         code(systemd.ReadyWhenReady),
	"supervisor.metrics_listen":       "none",
	"supervisor.metrics_allow_remote": code("false"),
	"supervisor.stop_order":           code(string(spec.StopOrdered)),

	"backoff.initial": dur(spec.DefaultBackoffInitial),
	"backoff.max":     dur(spec.DefaultBackoffMax),
	"backoff.reset":   dur(spec.DefaultBackoffReset),

	"group.restart_policy":           code(string(spec.RestartAlways)),
	"group.termination_grace_period": dur(spec.DefaultTerminationGracePeriod),
	"group.backoff_limit":            "no limit",
	"group.env_file":                 "",
	"group.env":                      "",
	"group.backoff":                  "the top-level one",
	"group.sandbox":                  "none: the host's namespaces",
	"group.init":                     "",
	"group.process":                  "",
	"group.depends_on":               "",
	"group.run_as_non_root":          code("false"),
	"group.supplemental_groups":      "",
	"group.umask":                    "podsup's",
	"group.privileged":               "unset: by where it runs",
	"group.no_new_privileges":        code("false"),
	"group.seccomp":                  code(spec.SeccompUnconfined),
	"group.oom_score_adj":            "podsup's",
	"group.capabilities":             "",
	"group.rlimits":                  "podsup's",
	"group.volume":                   "",

	"capabilities.add":  "",
	"capabilities.drop": "",

	"sandbox.namespaces":                "none",
	"sandbox.hostname":                  "",
	"sandbox.rootfs":                    "",
	"sandbox.read_only_root_filesystem": code("false"),
	"sandbox.private_tmp":               code("false"),
	"sandbox.proc_mount":                code(spec.ProcMountDefault),
	"sandbox.user_namespace":            code("false"),
	"sandbox.subid_user":                code(spec.DefaultSubIDUser),
	"sandbox.mount":                     "",
	"sandbox.resources":                 "",
	"sandbox.network":                   "mode `none` with `net`, `host` without",

	"network.mode":        "",
	"network.name":        "",
	"network.conf_dir":    code(spec.DefaultCNIConfDir),
	"network.plugin_dirs": "`/opt/cni/bin`, `/usr/lib/cni`",
	"network.bridge":      code(spec.DefaultBridge),
	"network.subnet":      code(spec.DefaultBridgeSubnet),
	"network.port":        "",

	"port.container_port": "",
	"port.host_port":      "none: not published",
	"port.protocol":       code("tcp"),
	"port.host_ip":        "every address",

	"sandbox.host_alias": "",
	"sandbox.dns":        "the host's",

	"host_alias.ip":        "",
	"host_alias.hostnames": "",
	"dns.nameservers":      "the host's",
	"dns.searches":         "",
	"dns.options":          "",

	"volume.type":              "",
	"volume.medium":            "disk",
	"volume.size_limit":        "none",
	"volume.path":              "",
	"volume.host_path_type":    "",
	"volume.file":              "",
	"volume.restart_on_change": code("false"),
	"volume.mode":              "`0644`, a secret's `0400`",
	"group.fs_group":           "",
	"file.content":             "",
	"file.source":              "",

	"volume_mount.volume":    "",
	"volume_mount.path":      "",
	"volume_mount.read_only": code("false"),
	"volume_mount.sub_path":  "",

	"mount.type":     "",
	"mount.target":   "",
	"mount.source":   "the type",
	"mount.readonly": code("false"),
	"mount.options":  "",

	"resources.memory":      "no limit",
	"resources.cpu":         "no limit",
	"resources.cpu_weight":  "100", // what sandbox/cgroups writes to cpu.weight when unset: the kernel's default
	"resources.pids":        "no limit",
	"resources.cpu_request": "none",
	"grpc.port":             "",
	"grpc.service":          code(`""`),

	"process.command":        "",
	"process.env":            "",
	"process.env_file":       "",
	"process.working_dir":    "podsup's",
	"process.image":          "",
	"process.user":           "podsup's",
	"process.group":          "the user's",
	"process.stop_signal":    code(unix.SignalName((&spec.Process{}).EffectiveStopSignal())),
	"process.restart_policy": "the group's",
	"process.critical":       code("false"),
	"process.readiness":      "probes only",
	"process.watchdog":       "none",
	"process.sockets":        "",

	"process.run_as_non_root":     "the group's",
	"process.supplemental_groups": "the group's",
	"process.umask":               "the group's",
	"process.privileged":          "the group's",
	"process.no_new_privileges":   "the group's",
	"process.seccomp":             "the group's",
	"process.oom_score_adj":       "the group's",
	"process.capabilities":        "the group's",
	"process.rlimits":             "the group's",
	"process.depends_on":          "",
	"process.volume_mount":        "",
	"process.startup_probe":       "",
	"process.liveness_probe":      "",
	"process.readiness_probe":     "",
	"process.pre_start":           "",
	"process.post_start":          "",
	"process.pre_stop":            "",
	"process.post_stop":           "",
	"process.log":                 "capture",
	"process.resources":           "",

	"log.mode":             code("capture"),
	"log.max_size":         size(logs.DefaultMaxFileSize),
	"log.max_files":        num(logs.DefaultMaxFiles),
	"log.journal":          code("false"),
	"log.separate_streams": code("false"),
	"log.stdout":           code("true"),

	"probe.initial_delay":            dur(0),
	"probe.period":                   dur(spec.DefaultProbePeriod),
	"probe.timeout":                  dur(spec.DefaultProbeTimeout),
	"probe.success_threshold":        num(spec.DefaultProbeSuccessThreshold),
	"probe.failure_threshold":        num(spec.DefaultProbeFailureThreshold),
	"probe.termination_grace_period": "the group's",
	"probe.exec":                     "",
	"probe.http_get":                 "",
	"probe.tcp_socket":               "",
	"probe.grpc":                     "",

	"hook.timeout":  "none for post_start and pre_stop (podsup waits for a pre_stop up to the grace period, and it ends when the process is killed), " + dur(spec.DefaultHookTimeout(spec.PreStart)) + " for the others",
	"hook.exec":     "",
	"hook.http_get": "",
	"hook.sleep":    "",

	"exec.command": "",

	"http_get.port":    "",
	"http_get.scheme":  code("http"),
	"http_get.host":    code(spec.DefaultHost),
	"http_get.path":    code("/"),
	"http_get.headers": "",

	"tcp_socket.port": "",
	"tcp_socket.host": code(spec.DefaultHost),

	"sleep.duration": "",

	"depends_on.condition": code(string(spec.ConditionStarted)),
	"depends_on.timeout":   "none",
	"depends_on.restart":   code("false"),
}

// TestReferenceDefaultsAgree: the defaults that referenceDefaults can only
// write as a phrase or a literal agree with the code that applies them.
func TestReferenceDefaultsAgree(t *testing.T) {
	t.Parallel()
	if got := spec.DefaultHookTimeout(spec.PostStop); got != spec.DefaultHookTimeout(spec.PreStart) {
		t.Errorf("post_stop's default timeout is %s, pre_start's %s: the reference gives one figure for both", got, spec.DefaultHookTimeout(spec.PreStart))
	}
	if got := spec.DefaultHookTimeout(spec.PostStart); got != 0 {
		t.Errorf("post_start's default timeout is %s; the reference says none", got)
	}
	if got := (spec.HTTPGetAction{}).URL(); got != "http://"+spec.DefaultHost+":0/" {
		t.Errorf("an empty http_get goes to %s; the reference says scheme http, host %s, path /", got, spec.DefaultHost)
	}
	if got := (&spec.Group{}).EffectiveRestartPolicy(nil); got != spec.RestartAlways {
		t.Errorf("a group's default restart policy is %s", got)
	}
	cfg, err := parse([]byte(`group "g" {
  process "p" { command = ["true"] }
}`), "defaults.hcl", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Backoff != spec.DefaultBackoff() {
		t.Errorf("a file without a backoff block decodes to %+v, not kubelet's %+v", cfg.Backoff, spec.DefaultBackoff())
	}
	if g := cfg.Groups[0]; g.Grace() != spec.DefaultTerminationGracePeriod {
		t.Errorf("a group without termination_grace_period gets %s", g.Grace())
	}
}

// code is a literal default, as the reference writes it: `value`.
func code(s string) string { return "`" + s + "`" }

// num is a numeric default, written bare.
func num(n int) string { return fmt.Sprint(n) }

// dur is a duration as a user would write it: `5m` rather than `5m0s`.
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return code(s)
}

// size is a byte count in the largest binary unit that divides it.
func size(n int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"Gi", 30}, {"Mi", 20}, {"Ki", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return code(fmt.Sprintf("%d%s", n>>u.shift, u.suffix))
		}
	}
	return code(fmt.Sprint(n))
}

func init() {
	// Every limit of the rlimits block is, unset, what podsup's own is.
	for _, n := range spec.RlimitNames {
		referenceDefaults["rlimits."+n] = "podsup's"
	}
}
