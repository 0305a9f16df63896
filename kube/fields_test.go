package kube

import (
	"reflect"
	"slices"
	"testing"

	"github.com/podsup/podsup/spec"
)

// The HCL writer and the export name spec's fields one by one. A field
// added to spec must be added to them (writeProcess, writeGroupFields,
// container, ...) and to this list, or convert would drop it and the
// round trip would lose it for any file that sets it.
func TestBridgeKnowsEverySpecField(t *testing.T) {
	t.Parallel()
	known := map[reflect.Type][]string{
		reflect.TypeFor[spec.Config]():          {"Supervisor", "Backoff", "Groups"},
		reflect.TypeFor[spec.Supervisor]():      {"Socket", "SocketGroup", "SocketGroupRoles", "LogLevel", "LogFormat", "LogDir", "MinimumGrace", "NotifyReady", "MetricsListen", "MetricsAllowRemote", "StopOrder"},
		reflect.TypeFor[spec.Backoff]():         {"Initial", "Max", "Reset"},
		reflect.TypeFor[spec.Group]():           {"Name", "RestartPolicy", "TerminationGracePeriod", "Backoff", "Sandbox", "Init", "Processes", "DependsOn", "Security", "BackoffLimit", "Volumes", "FSGroup"},
		reflect.TypeFor[spec.Sandbox]():         {"Namespaces", "Hostname", "Mounts", "Rootfs", "Resources", "ReadOnlyRootFilesystem", "PrivateTmp", "ProcMount", "Network", "HostAliases", "DNS", "UserNamespace", "SubIDUser"},
		reflect.TypeFor[spec.Mount]():           {"Type", "Source", "Target", "ReadOnly", "Options", "NoSymlinks"},
		reflect.TypeFor[spec.Resources]():       {"Memory", "CPU", "CPUWeight", "Pids", "CPURequest"},
		reflect.TypeFor[spec.Process]():         {"Name", "Command", "Image", "Env", "WorkingDir", "User", "Group", "Security", "StopSignal", "RestartPolicy", "Critical", "Resources", "StartupProbe", "LivenessProbe", "ReadinessProbe", "PreStart", "PostStart", "PreStop", "PostStop", "Log", "Readiness", "Watchdog", "Sockets", "DependsOn", "VolumeMounts"},
		reflect.TypeFor[spec.Security]():        {"RunAsNonRoot", "SupplementalGroups", "Umask", "Privileged", "Capabilities", "NoNewPrivileges", "Seccomp", "Rlimits", "OOMScoreAdj"},
		reflect.TypeFor[spec.Capabilities]():    {"Add", "Drop"},
		reflect.TypeFor[spec.Rlimit]():          {"Soft", "Hard"},
		reflect.TypeFor[spec.Log]():             {"Mode", "MaxSize", "MaxFiles", "Journal", "SeparateStreams", "NoStdout"},
		reflect.TypeFor[spec.Probe]():           {"Handler", "InitialDelay", "Period", "Timeout", "SuccessThreshold", "FailureThreshold", "TerminationGracePeriod"},
		reflect.TypeFor[spec.Hook]():            {"Handler", "Timeout"},
		reflect.TypeFor[spec.Handler]():         {"Exec", "HTTPGet", "TCPSocket", "Sleep", "GRPC"},
		reflect.TypeFor[spec.GRPCAction]():      {"Port", "Service"},
		reflect.TypeFor[spec.ExecAction]():      {"Command"},
		reflect.TypeFor[spec.HTTPGetAction]():   {"Scheme", "Host", "Port", "Path", "Headers"},
		reflect.TypeFor[spec.TCPSocketAction](): {"Host", "Port"},
		reflect.TypeFor[spec.SleepAction]():     {"Duration"},
		reflect.TypeFor[spec.Dependency]():      {"Name", "Condition", "Timeout", "Restart"},
		reflect.TypeFor[spec.Volume]():          {"Name", "Type", "Medium", "SizeLimit", "Path", "HostPathType", "Files", "Mode", "RestartOnChange"},
		reflect.TypeFor[spec.VolumeFile]():      {"Name", "Content", "Source"},
		reflect.TypeFor[spec.VolumeMount]():     {"Volume", "Path", "ReadOnly", "SubPath"},
		reflect.TypeFor[spec.HostAlias]():       {"IP", "Hostnames"},
		reflect.TypeFor[spec.DNSConfig]():       {"Nameservers", "Searches", "Options"},
	}
	for typ, names := range known {
		var got []string
		for i := 0; i < typ.NumField(); i++ {
			got = append(got, typ.Field(i).Name)
		}
		if !slices.Equal(got, names) {
			t.Errorf("spec.%s has fields %v; the bridge knows %v: teach package kube the difference", typ.Name(), got, names)
		}
	}
}
