// Package kube is podsup's Kubernetes bridge: Convert reads Pod manifests
// (and the pod templates of Deployments, StatefulSets, DaemonSets,
// ReplicaSets, Jobs and CronJobs) into spec values, WriteHCL writes them
// as a configuration file, and Export writes podsup groups as Pods.
//
// Manifests are decoded with Kubernetes' own API types, strictly: an
// unknown or duplicated field is an error naming its path. A
// multi-document file gives one group per object, named after it; a
// document of a kind that runs no process (a Service, a
// PersistentVolumeClaim, a ConfigMap, ...: skippedKinds) is skipped with a
// note naming it, and a batch/v1beta1 CronJob is read as batch/v1 with a
// warning.
//
// # The mapping
//
//	metadata.name                       group name (a workload's, not its template's)
//	metadata.annotations[podsup.dev/*]  podsup-only fields (below)
//	spec.restartPolicy                  restart_policy
//	a Job's spec.backoffLimit           backoff_limit (6, with a note, when unset);
//	                                    export writes it in podsup.dev/group
//	spec.terminationGracePeriodSeconds  termination_grace_period
//	spec.hostname                       sandbox hostname, in a uts namespace
//	spec.shareProcessNamespace: true    sandbox pid and mount namespaces, /proc mounted
//	spec.hostNetwork                    the host's network (no network block)
//	containers[].ports                  with a hostPort (and no hostNetwork): a net
//	                                    namespace and network { mode = "bridge" } with
//	                                    every container port as a port block (name,
//	                                    containerPort, hostPort, hostIP, protocol);
//	                                    without one, the host's network, where the
//	                                    ports already are (probes reach 127.0.0.1)
//	spec.securityContext.runAsUser/Group  every process's user/group
//	spec.resources (pod-level)          sandbox resources: limits.memory → memory,
//	                                    limits.cpu → cpu, limits.pids → pids,
//	                                    requests.cpu → cpu_request (and kubelet's
//	                                    cpu_weight for it); export writes the
//	                                    request back as it was
//	containers[].resources              the same, summed over the containers (the larger
//	                                    of that and any init container's), as kubelet
//	                                    sizes the pod cgroup; no limit unless all set one;
//	                                    and each its process's own resources (memory,
//	                                    cpu, cpu_request), a cgroup per container as
//	                                    kubelet's (sandbox {} when the group has no
//	                                    other); export writes these on the container
//	                                    and spec.resources only when the containers'
//	                                    do not sum to the group's
//	containers[]                        process; initContainers[] → init
//	initContainers[].restartPolicy      Always: a sidecar, restart_policy = "always"
//	  name, command + args, env[].value, workingDir
//	                                    $(VAR) expanded as kubelet does: each env
//	                                    value with the entries before it, command
//	                                    and args with all; $$ is $, an undefined
//	                                    name stays as written (export escapes $
//	                                    so that kubelet passes podsup's text)
//	  envFrom, env[].valueFrom          resolved at convert time, as kubelet does:
//	                                    configMapKeyRef, secretKeyRef, envFrom's
//	                                    configMapRef and secretRef (with prefix) from
//	                                    the ConfigMap and Secret documents of the
//	                                    input or Options.EnvSources (--configmap,
//	                                    --secret), optional honoured; fieldRef
//	                                    metadata.name (the group's), namespace
//	                                    ("default" when none), uid (metadata.uid,
//	                                    else a new one), labels['K'],
//	                                    annotations['K'], spec.nodeName (else
//	                                    Options.NodeName (--node-name), else this
//	                                    machine's hostname), spec.serviceAccountName,
//	                                    status.podIP(s) and status.hostIP(s) from
//	                                    Options.PodIP and HostIP (--pod-ip, --host-ip:
//	                                    refused without them);
//	                                    resourceFieldRef of a set limit or request
//	  (the runtime's variables)         HOSTNAME, the pod's hostname (spec.hostname,
//	                                    else its name), unless the container sets
//	                                    it or the pod is hostNetwork (the node's,
//	                                    unknown here); an Indexed Job's
//	                                    JOB_COMPLETION_INDEX=0 (podsup runs its one
//	                                    pod, index 0's); not set: service links
//	                                    (NAME_SERVICE_HOST, ...), KUBERNETES_SERVICE_*
//	                                    and KUBERNETES_PORT* (no Service, no API
//	                                    server), and an image's PATH or HOME
//	                                    unless --image gives its Env
//	  startupProbe, livenessProbe, readinessProbe: exec, httpGet (named ports
//	    resolved through ports[]), tcpSocket, grpc and every timing field;
//	    httpGet.protocol other than HTTP1 (1.37) a warning: podsup speaks HTTP/1.1
//	  lifecycle.postStart, lifecycle.preStop: exec, httpGet, sleep
//	  lifecycle.stopSignal              stop_signal
//	  securityContext.runAsUser/Group   user/group
//	  image                             image (data podsup keeps and never runs) and
//	                                    a note; with Options.Rootfs, the sandbox's
//	                                    rootfs; with Options.Images (--image
//	                                    IMAGE=DIR: an OCI image layout or an
//	                                    unpacked bundle, ReadImage) its Entrypoint and
//	                                    Cmd by kubelet's rules (command and args; else
//	                                    Entrypoint and args; else Entrypoint and Cmd),
//	                                    its Env under the container's, its WorkingDir
//	                                    and User where the container sets none;
//	                                    Options.Entrypoints (--entrypoint) without one
//	  volumeMounts[]                    volume_mount (name, mountPath, readOnly, subPath)
//	spec.volumes[]                      volume: emptyDir (medium Memory, sizeLimit),
//	                                    hostPath (type), configMap and secret (items,
//	                                    from the ConfigMap and Secret documents of the
//	                                    same manifest; Export writes them, one per
//	                                    volume); other kinds are warnings by path
//	spec.hostAliases, spec.dnsConfig    sandbox host_alias blocks and dns block (a
//	                                    mount namespace: podsup writes /etc/hosts and
//	                                    /etc/resolv.conf); Export sets dnsPolicy None
//	spec.subdomain                      the sandbox hostname's domain: hostname.subdomain
//	configMap/secret defaultMode        volume mode (unset: a secret's files are 0400)
//	spec.securityContext.fsGroup        group fs_group
//
// Refused (errors): what valueFrom or envFrom cannot know (a ConfigMap,
// Secret or key that is missing and not optional, status.podIP and
// status.hostIP, a limit the container does not set), an init container's
// restartPolicy other than Always, a container without command whose image
// podsup-kube was given no configuration or entrypoint for, a named port the container does not have, two images
// mapped to different root filesystems in one pod. Labels and selectors
// mean nothing outside Kubernetes and are not read, nor is a StatefulSet's
// serviceName (the Service that names its pods in the cluster's DNS). A
// workload's spec.replicas other than 1 and a CronJob's schedule are
// warnings of their own (podsup runs one copy, once); every other field
// of a workload outside its pod template (a Deployment's strategy, ...)
// is reported as below. Every other field set
// is a warning with its path (Options.Strict makes it an error), found by
// walking the object against the table above, so that no field is dropped
// in silence, including the fields of a newer k8s.io/api.
//
// # Annotations
//
// Export writes every field a Pod has in the Pod's own fields (a
// process without an image is an error unless ExportOptions.DefaultImage
// gives one: the API server requires it); what no Pod
// can say (back-off, namespaces and mounts beyond the derivable ones,
// sub-second durations, pre_start and post_stop hooks, hook timeouts,
// critical, readiness protocols, log settings, user names) goes into
// annotations holding the HCL of podsup's own file:
//
//	podsup.dev/group         the group's restart_policy, backoff_limit, termination_grace_period,
//	                         backoff and sandbox blocks
//	podsup.dev/process.NAME  fields of the process for container NAME
//	podsup.dev/init.NAME     fields of the init for init container NAME
//
// A field in an annotation replaces what the Pod's fields gave (a sandbox
// block replaces the whole sandbox). Export compares what the Pod's fields
// convert back to with the group, field by field, and annotates exactly
// the fields that differ, so Convert(Export(cfg)) has cfg's groups. The
// top-level backoff block becomes each group's own; the supervisor block is
// not exported (a warning says so).
package kube
