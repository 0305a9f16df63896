// Package kube is podsup's Kubernetes bridge: Convert reads Pod manifests
// (and the pod templates of Deployments, StatefulSets, DaemonSets,
// ReplicaSets, Jobs and CronJobs) into spec values, WriteHCL writes them
// as a configuration file, and Export writes podsup groups as Pods.
//
// Manifests are decoded with Kubernetes' own API types, strictly: an
// unknown or duplicated field is an error naming its path. A
// multi-document file gives one group per object, named after it.
//
// # The mapping
//
//	metadata.name                       group name (a workload's, not its template's)
//	metadata.annotations[podsup.dev/*]  podsup-only fields (below)
//	spec.restartPolicy                  restart_policy
//	spec.terminationGracePeriodSeconds  termination_grace_period
//	spec.hostname                       sandbox hostname, in a uts namespace
//	spec.shareProcessNamespace: true    sandbox pid and mount namespaces, /proc mounted
//	spec.hostNetwork                    nothing to do: processes always use the host's
//	                                    network (a pod without it gets no network
//	                                    namespace either; probes reach 127.0.0.1)
//	spec.securityContext.runAsUser/Group  every process's user/group
//	spec.resources (pod-level)          sandbox resources: limits.memory → memory,
//	                                    limits.cpu → cpu, requests.cpu → cpu_weight
//	containers[].resources              the same, summed over the containers (the larger
//	                                    of that and any init container's), as kubelet
//	                                    sizes the pod cgroup; no limit unless all set one
//	containers[]                        process; initContainers[] → init
//	initContainers[].restartPolicy      Always: a sidecar, restart_policy = "always"
//	  name, command + args, env[].value, workingDir
//	  startupProbe, livenessProbe, readinessProbe: exec, httpGet (named ports
//	    resolved through ports[]), tcpSocket and every timing field;
//	    httpGet.protocol other than HTTP1 (1.37) a warning: podsup speaks HTTP/1.1
//	  lifecycle.postStart, lifecycle.preStop: exec, httpGet, sleep
//	  lifecycle.stopSignal              stop_signal
//	  securityContext.runAsUser/Group   user/group
//	  image                             a comment and a warning; with Options.Rootfs,
//	                                    the sandbox's rootfs
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
// Refused (errors): env valueFrom, grpc probes, an init container's
// restartPolicy other than Always, a container without command (podsup runs no image, so it knows no
// entrypoint), a named port the container does not have, two images
// mapped to different root filesystems in one pod. Labels and selectors
// mean nothing outside Kubernetes and are not read, nor is a StatefulSet's
// serviceName (the Service that names its pods in the cluster's DNS). A
// workload's spec.replicas other than 1 and a CronJob's schedule are
// warnings of their own (podsup runs one copy, once); every other field
// of a workload outside its pod template (a Job's backoffLimit, a
// Deployment's strategy, ...) is reported as below. Every other field set
// is a warning with its path (Options.Strict makes it an error), found by
// walking the object against the table above, so that no field is dropped
// in silence, including the fields of a newer k8s.io/api.
//
// # Annotations
//
// Export writes every field a Pod has in the Pod's own fields; what no Pod
// can say (back-off, namespaces and mounts beyond the derivable ones,
// sub-second durations, pre_start and post_stop hooks, hook timeouts,
// critical, readiness protocols, log settings, user names) goes into
// annotations holding the HCL of podsup's own file:
//
//	podsup.dev/group         the group's restart_policy, termination_grace_period,
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
