package config

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/podsup/podsup/spec"
)

// blockSchema is the schema of one kind of block plus what error messages
// need: its name, and which nested blocks may appear only once.
type blockSchema struct {
	name   string // e.g. "process", used in "allowed in a process block"
	schema *hcl.BodySchema
	// single lists the block types that may appear at most once.
	single map[string]bool
}

// schemas is every block schema newSchema made, in order: the list the
// configuration reference (docs/config.md) is checked against.
var schemas []*blockSchema

func newSchema(name string, attrs []string, required []string, blocks []hcl.BlockHeaderSchema, repeatable ...string) *blockSchema {
	s := &blockSchema{name: name, schema: &hcl.BodySchema{}, single: map[string]bool{}}
	schemas = append(schemas, s)
	for _, a := range attrs {
		s.schema.Attributes = append(s.schema.Attributes, hcl.AttributeSchema{Name: a})
	}
	for _, a := range required {
		s.schema.Attributes = append(s.schema.Attributes, hcl.AttributeSchema{Name: a, Required: true})
	}
	s.schema.Blocks = blocks
	rep := map[string]bool{}
	for _, r := range repeatable {
		rep[r] = true
	}
	for _, b := range blocks {
		if !rep[b.Type] {
			s.single[b.Type] = true
		}
	}
	return s
}

// allowed describes what the block accepts, for "not expected here" errors
// that HCL could not turn into a "Did you mean" suggestion.
func (s *blockSchema) allowed() string {
	var attrs, blocks []string
	for _, a := range s.schema.Attributes {
		attrs = append(attrs, a.Name)
	}
	for _, b := range s.schema.Blocks {
		blocks = append(blocks, b.Type)
	}
	var parts []string
	if len(attrs) > 0 {
		parts = append(parts, "arguments "+strings.Join(attrs, ", "))
	}
	if len(blocks) > 0 {
		parts = append(parts, "blocks "+strings.Join(blocks, ", "))
	}
	where := "A " + s.name + " block"
	if s == fileSchema {
		where = "The top level of a file"
	}
	return where + " takes " + strings.Join(parts, "; ") + "."
}

func blocks(types ...string) []hcl.BlockHeaderSchema {
	out := make([]hcl.BlockHeaderSchema, len(types))
	for i, t := range types {
		out[i] = hcl.BlockHeaderSchema{Type: t}
	}
	return out
}

func named(types ...string) []hcl.BlockHeaderSchema {
	out := make([]hcl.BlockHeaderSchema, len(types))
	for i, t := range types {
		out[i] = hcl.BlockHeaderSchema{Type: t, LabelNames: []string{"name"}}
	}
	return out
}

// securityAttrs are the flat arguments of a security context
// (spec.Security), in a process, an init or a group (its processes'
// defaults).
var securityAttrs = []string{"run_as_non_root", "supplemental_groups", "umask", "privileged",
	"no_new_privileges", "seccomp", "oom_score_adj"}

// The whole schema, top down. Field names are Kubernetes' in snake_case
// (docs/semantics.md X1); the attribute lists are the contract users see.
var (
	fileSchema = newSchema("top-level", nil, nil,
		append(blocks("supervisor", "backoff"), named("variable", "group")...), "variable", "group")

	variableSchema = newSchema("variable", []string{"default", "description"}, nil, nil)

	supervisorSchema = newSchema("supervisor",
		[]string{"socket", "socket_group", "socket_group_roles", "log_level", "log_format", "log_dir", "minimum_grace", "notify_ready", "metrics_listen", "metrics_allow_remote", "stop_order"}, nil, nil)

	backoffSchema = newSchema("backoff", []string{"initial", "max", "reset"}, nil, nil)

	groupSchema = newSchema("group",
		append([]string{"restart_policy", "termination_grace_period", "env", "env_file", "backoff_limit", "fs_group"}, securityAttrs...), nil,
		append(blocks("backoff", "sandbox", "capabilities", "rlimits"), named("init", "process", "depends_on", "volume")...), "init", "process", "depends_on", "volume")

	sandboxSchema = newSchema("sandbox",
		[]string{"namespaces", "hostname", "rootfs", "read_only_root_filesystem", "private_tmp", "proc_mount", "user_namespace", "subid_user"}, nil,
		blocks("mount", "resources", "network", "host_alias", "dns"), "mount", "host_alias")

	networkSchema = newSchema("network",
		[]string{"name", "conf_dir", "plugin_dirs", "bridge", "subnet"}, []string{"mode"},
		named("port"), "port")

	portSchema = newSchema("port", []string{"host_port", "protocol", "host_ip"}, []string{"container_port"}, nil)

	mountSchema = newSchema("mount", []string{"source", "readonly", "options"}, []string{"type", "target"}, nil)

	hostAliasSchema = newSchema("host_alias", nil, []string{"ip", "hostnames"}, nil)
	dnsSchema       = newSchema("dns", []string{"nameservers", "searches", "options"}, nil, nil)

	volumeSchema      = newSchema("volume", []string{"medium", "size_limit", "path", "host_path_type", "mode", "restart_on_change"}, []string{"type"}, named("file"), "file")
	volumeFileSchema  = newSchema("file", []string{"content", "source"}, nil, nil)
	volumeMountSchema = newSchema("volume_mount", []string{"read_only", "sub_path"}, []string{"volume", "path"}, nil)

	resourcesSchema = newSchema("resources", []string{"memory", "cpu", "cpu_weight", "pids", "cpu_request"}, nil, nil)

	processSchema = newSchema("process",
		append([]string{"command", "env", "env_file", "working_dir", "user", "group", "stop_signal", "restart_policy",
			"critical", "readiness", "watchdog", "sockets", "image"}, securityAttrs...), nil,
		append(blocks("startup_probe", "liveness_probe", "readiness_probe",
			"pre_start", "post_start", "pre_stop", "post_stop", "log", "resources", "capabilities", "rlimits", "volume_mount"), named("depends_on")...), "depends_on", "volume_mount")

	// initSchema is processSchema under its own name: an init takes the same
	// fields, and spec's validation says which of them make no sense there.
	initSchema = &blockSchema{name: "init", schema: processSchema.schema, single: processSchema.single}

	// capabilitiesSchema and rlimitsSchema are blocks of a security
	// context, in a process or a group.
	capabilitiesSchema = newSchema("capabilities", []string{"add", "drop"}, nil, nil)
	rlimitsSchema      = newSchema("rlimits", spec.RlimitNames, nil, nil)

	dependsOnSchema = newSchema("depends_on", []string{"condition", "timeout", "restart"}, nil, nil)

	logSchema = newSchema("log", []string{"mode", "max_size", "max_files", "journal", "separate_streams", "stdout"}, nil, nil)

	probeSchema = newSchema("probe",
		[]string{"initial_delay", "period", "timeout", "success_threshold", "failure_threshold", "termination_grace_period"}, nil,
		blocks("exec", "http_get", "tcp_socket", "grpc"))

	hookSchema = newSchema("hook", []string{"timeout"}, nil, blocks("exec", "http_get", "sleep"))

	execSchema      = newSchema("exec", []string{"command"}, nil, nil)
	httpGetSchema   = newSchema("http_get", []string{"scheme", "host", "path", "headers"}, []string{"port"}, nil)
	tcpSocketSchema = newSchema("tcp_socket", []string{"host"}, []string{"port"}, nil)
	grpcSchema      = newSchema("grpc", []string{"service"}, []string{"port"}, nil)
	sleepSchema     = newSchema("sleep", nil, []string{"duration"}, nil)
)
