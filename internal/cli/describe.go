package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"tug/internal/api"
	"tug/internal/cli/cmdflag"
	"tug/internal/events"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/redact"
)

const describeUsage = `usage: tug describe [-n NAMESPACE] [--socket PATH] POD

Prints one pod as "kubectl describe pod" does: its node, start time,
labels, annotations, status, IP, manifest file or URL, containers (image,
ports, command, state and last state, readiness, restarts, resources,
probes, environment, mounts), conditions, volumes, QoS class, tug's rollout
record of the pod and its recent events. An environment variable from a
Secret shows where its value comes from, never the value; an annotation
whose key looks like a secret's (password, token, ...) shows a mask. POD
is the name "tug pods" shows, or the name written in the manifest.

`

// describeCmd is "tug describe POD". It returns the exit code: 1 when tug
// cannot be asked or has no such pod, 2 for a usage error.
func (e Env) describeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("describe")
	socket, ns := podFlags(fs, e.Socket)
	pos, code, ok := cmdflag.Parse(fs, args, describeUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmdflag.UsageError(stderr, describeUsage, "tug describe takes one pod name")
	}
	c := &api.Client{SocketPath: *socket}
	d, err := readDescribed(ctx, c, *ns, pos[0])
	if err == nil {
		err = writeDescription(stdout, d, time.Now())
	}
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	return 0
}

// described is what "tug describe" prints of a pod.
type described struct {
	Pod    podview.View
	Node   string // the node's name ("" unknown)
	Source string // the pod's manifest file or URL ("" unknown)
	// UpdateWaiting is the source file's update held for its window (nil:
	// none).
	UpdateWaiting *podview.UpdateWaiting
	// Wave is the source's place in a bundle rollout (nil: none).
	Wave    *podview.WaveState
	Events  []events.Event
	History *pod.RolloutHistory // nil: tug has no rollout record of the pod
}

// readDescribed asks the agent for the pod and what goes with it. Only the
// pod is required: what else the agent cannot say is left out.
func readDescribed(ctx context.Context, c *api.Client, ns, name string) (described, error) {
	v, err := c.Pod(ctx, ns, name)
	if err != nil {
		return described{}, err
	}
	d := described{Pod: v}
	if n, err := c.Node(ctx); err == nil {
		d.Node = n.Metadata.Name
	}
	if ms, err := c.Manifests(ctx); err == nil {
		for _, m := range ms {
			if slices.Contains(m.UIDs, v.Metadata.UID) {
				d.Source, d.UpdateWaiting, d.Wave = m.File, m.UpdateWaiting, m.Wave
			}
		}
	}
	evs, err := c.Events(ctx, api.EventQuery{Namespace: v.Metadata.Namespace, UID: v.Metadata.UID})
	if err != nil && !errors.Is(err, api.ErrNotFound) {
		return described{}, err
	}
	d.Events = evs
	if h, err := c.History(ctx, v.Metadata.Namespace, v.Metadata.Name); err == nil && len(h.Entries) > 0 {
		d.History = &h
	}
	return d, nil
}

// describeWriter writes kubectl describe's indented "Key:\tvalue" lines
// into a tabwriter. Every string argument is escaped: names, values and
// messages come from manifests and containers.
type describeWriter struct{ tw *tabwriter.Writer }

func (w describeWriter) line(level int, format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = escape(s)
		}
	}
	fmt.Fprintf(w.tw, strings.Repeat("  ", level)+format+"\n", args...)
}

// writeDescription prints d as "kubectl describe pod" does, with ages and
// times relative to now and in its location.
func writeDescription(out io.Writer, d described, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	w := describeWriter{tw}
	v := &d.Pod
	st := &v.Status
	when := func(t time.Time) string { return t.In(now.Location()).Format(time.RFC1123Z) }

	w.line(0, "Name:\t%s", v.Metadata.Name)
	w.line(0, "Namespace:\t%s", v.Metadata.Namespace)
	if v.Spec.Priority != nil {
		w.line(0, "Priority:\t%d", *v.Spec.Priority)
	}
	if v.Spec.PriorityClassName != "" {
		w.line(0, "Priority Class Name:\t%s", v.Spec.PriorityClassName)
	}
	if rc := v.Spec.RuntimeClass(); rc != "" {
		w.line(0, "Runtime Class Name:\t%s", rc)
	}
	switch {
	case d.Node != "" && st.HostIP != "":
		w.line(0, "Node:\t%s", d.Node+"/"+st.HostIP)
	default:
		w.line(0, "Node:\t%s", orNone(d.Node))
	}
	if st.StartTime != nil {
		w.line(0, "Start Time:\t%s", when(*st.StartTime))
	}
	writeMap(w, "Labels", v.Metadata.Labels, func(k, val string) string { return val })
	writeMap(w, "Annotations", v.Metadata.Annotations, annotationValue)
	if del := v.Metadata.DeletionTimestamp; del != nil {
		// As kubectl: how long the removal has lasted, and its grace.
		w.line(0, "Status:\tTerminating (lasts %s)", api.HumanDuration(now.Sub(*del)))
		if g := v.Metadata.DeletionGracePeriodSeconds; g != nil {
			w.line(0, "Termination Grace Period:\t%ds", *g)
		}
	} else {
		w.line(0, "Status:\t%s", cmp.Or(string(st.Phase), string(pod.PhaseUnknown)))
	}
	if st.Reason != "" {
		w.line(0, "Reason:\t%s", st.Reason)
	}
	if st.Message != "" {
		w.line(0, "Message:\t%s", st.Message)
	}
	w.line(0, "Source:\t%s", orNone(redact.URL(d.Source)))
	if d.UpdateWaiting != nil {
		w.line(0, "Update:\t%s", UpdateWaitingText(d.UpdateWaiting, now))
	}
	if d.Wave != nil && d.Wave.State != "waiting" {
		w.line(0, "Rollout wave:\t%s", WaveText(d.Wave))
	}
	w.line(0, "IP:\t%s", podIP(st))
	if len(st.PodIPs) > 0 {
		w.line(0, "IPs:")
		for _, ip := range st.PodIPs {
			w.line(1, "IP:\t%s", ip.IP)
		}
	} else {
		w.line(0, "IPs:\t<none>")
	}
	if len(v.Spec.InitContainers) > 0 {
		w.line(0, "Init Containers:")
		writeContainers(w, v.Spec.InitContainers, st.InitContainerStatuses, when)
	}
	w.line(0, "Containers:")
	writeContainers(w, v.Spec.Containers, st.ContainerStatuses, when)
	if len(st.Conditions) > 0 {
		w.line(0, "Conditions:")
		w.line(1, "Type\tStatus")
		for _, c := range st.Conditions {
			w.line(1, "%s\t%s", c.Type, c.Status)
		}
		for _, c := range st.Conditions {
			if c.Type == pod.ConditionPodResizePending || c.Type == pod.ConditionPodResizeInProgress {
				w.line(0, "Resize:\t%s (%s): %s", c.Type, c.Reason, c.Message)
			}
			if c.Type == pod.ConditionImageFromCache {
				w.line(0, "Image from cache:\t%s", c.Message)
			}
		}
	}
	writeVolumes(w, v.Spec.Volumes)
	w.line(0, "QoS Class:\t%s", orNone(st.QOSClass))
	writeMap(w, "Node-Selectors", v.Spec.NodeSelector, func(k, val string) string { return val })
	if len(v.Spec.Tolerations) == 0 {
		w.line(0, "Tolerations:\t<none>")
	}
	for i, t := range v.Spec.Tolerations {
		label := ""
		if i == 0 {
			label = "Tolerations:"
		}
		w.line(0, "%s\t%s", label, toleration(t))
	}
	if h := d.History; h != nil {
		writeHistory(w, h, when)
	}
	writeEvents(w, d.Events, now)
	return tw.Flush()
}

// writeMap writes a map as kubectl does: "Key:\tk=v" and the other pairs
// on the lines below, sorted by key; "<none>" when empty. value gives what
// to print of a pair's value.
func writeMap(w describeWriter, title string, m map[string]string, value func(k, v string) string) {
	keys := slices.Sorted(maps.Keys(m))
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "kubectl.kubernetes.io/last-applied-configuration" })
	if len(keys) == 0 {
		w.line(0, "%s:\t<none>", title)
		return
	}
	for i, k := range keys {
		label := ""
		if i == 0 {
			label = title + ":"
		}
		w.line(0, "%s\t%s", label, k+"="+value(k, m[k]))
	}
}

// secretWords are parts of an annotation key that say its value is a
// secret.
var secretWords = []string{"password", "passwd", "secret", "token", "credential", "apikey", "api-key", "api_key", "private-key", "privatekey"}

// annotationValue masks the value of an annotation whose key looks like a
// secret's: describe output is pasted into tickets and chats.
func annotationValue(k, v string) string {
	lk := strings.ToLower(k)
	for _, s := range secretWords {
		if strings.Contains(lk, s) {
			return redact.Mask
		}
	}
	return v
}

// writeContainers writes the Containers (or Init Containers) section.
func writeContainers(w describeWriter, ctrs []pod.Container, statuses []pod.ContainerStatus, when func(time.Time) string) {
	for i := range ctrs {
		c := &ctrs[i]
		var cs *pod.ContainerStatus
		for j := range statuses {
			if statuses[j].Name == c.Name {
				cs = &statuses[j]
			}
		}
		w.line(1, "%s:", c.Name)
		if cs != nil && cs.ContainerID != "" {
			w.line(2, "Container ID:\t%s", cs.ContainerID)
		}
		w.line(2, "Image:\t%s", c.Image)
		if cs != nil {
			w.line(2, "Image ID:\t%s", cs.ImageID)
			for _, m := range cs.VolumeMounts {
				if m.Image != nil {
					w.line(2, "Image Volume %s:\t%s", m.Name, m.Image.ImageRef)
				}
			}
		}
		writePorts(w, c.Ports)
		writeArgs(w, "Command", c.Command)
		writeArgs(w, "Args", c.Args)
		var state, last pod.ContainerState
		ready, restarts := false, int32(0)
		if cs != nil {
			state, last, ready, restarts = cs.State, cs.LastTerminationState, cs.Ready, cs.RestartCount
		}
		writeState(w, "State", state, when)
		if last.Waiting != nil || last.Running != nil || last.Terminated != nil {
			writeState(w, "Last State", last, when)
		}
		w.line(2, "Ready:\t%s", boolWord(ready))
		w.line(2, "Restart Count:\t%d", restarts)
		writeResources(w, "Limits", c.Resources.Limits)
		writeResources(w, "Requests", c.Resources.Requests)
		for _, p := range []struct {
			name  string
			probe *pod.Probe
		}{{"Liveness", c.LivenessProbe}, {"Readiness", c.ReadinessProbe}, {"Startup", c.StartupProbe}} {
			if p.probe != nil {
				w.line(2, "%s:\t%s", p.name, probeLine(p.probe))
			}
		}
		writeEnv(w, c)
		writeMounts(w, c.VolumeMounts)
	}
}

func boolWord(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// writePorts writes "Port:" and "Host Port:" (or "Ports:" and "Host
// Ports:" for several) as "8080/TCP", with a named port's name.
func writePorts(w describeWriter, ports []pod.ContainerPort) {
	if len(ports) == 0 {
		w.line(2, "Port:\t<none>")
		w.line(2, "Host Port:\t<none>")
		return
	}
	var cp, hp []string
	for _, p := range ports {
		proto := cmp.Or(string(p.Protocol), string(pod.ProtocolTCP))
		c, h := fmt.Sprintf("%d/%s", p.ContainerPort, proto), fmt.Sprintf("%d/%s", p.HostPort, proto)
		if p.Name != "" {
			c += " (" + p.Name + ")"
			h += " (" + p.Name + ")"
		}
		cp, hp = append(cp, c), append(hp, h)
	}
	if len(ports) == 1 {
		w.line(2, "Port:\t%s", cp[0])
		w.line(2, "Host Port:\t%s", hp[0])
		return
	}
	w.line(2, "Ports:\t%s", strings.Join(cp, ", "))
	w.line(2, "Host Ports:\t%s", strings.Join(hp, ", "))
}

// writeArgs writes a command or args list, one line per line of each item.
func writeArgs(w describeWriter, title string, args []string) {
	if len(args) == 0 {
		return
	}
	w.line(2, "%s:", title)
	for _, a := range args {
		for _, l := range strings.Split(a, "\n") {
			w.line(3, "%s", l)
		}
	}
}

// writeState writes a container state as kubectl does.
func writeState(w describeWriter, title string, s pod.ContainerState, when func(time.Time) string) {
	switch {
	case s.Running != nil:
		w.line(2, "%s:\tRunning", title)
		w.line(3, "Started:\t%s", when(s.Running.StartedAt))
	case s.Terminated != nil:
		t := s.Terminated
		w.line(2, "%s:\tTerminated", title)
		if t.Reason != "" {
			w.line(3, "Reason:\t%s", t.Reason)
		}
		if t.Message != "" {
			w.line(3, "Message:\t%s", t.Message)
		}
		w.line(3, "Exit Code:\t%d", t.ExitCode)
		if t.Signal != 0 {
			w.line(3, "Signal:\t%d", t.Signal)
		}
		w.line(3, "Started:\t%s", when(t.StartedAt))
		w.line(3, "Finished:\t%s", when(t.FinishedAt))
	default:
		w.line(2, "%s:\tWaiting", title)
		if s.Waiting != nil && s.Waiting.Reason != "" {
			w.line(3, "Reason:\t%s", s.Waiting.Reason)
		}
		if s.Waiting != nil && s.Waiting.Message != "" {
			w.line(3, "Message:\t%s", s.Waiting.Message)
		}
	}
}

// writeResources writes a container's limits or requests, by name.
func writeResources(w describeWriter, title string, l pod.ResourceList) {
	if len(l) == 0 {
		return
	}
	w.line(2, "%s:", title)
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		w.line(3, "%s:\t%s", string(name), q.String())
	}
}

// probeLine sums a probe up as kubectl does: "http-get http://:8080/healthz
// delay=0s timeout=1s period=10s #success=1 #failure=3".
func probeLine(p *pod.Probe) string {
	attrs := fmt.Sprintf("delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
		p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
	switch {
	case p.Exec != nil:
		return fmt.Sprintf("exec [%s] %s", strings.Join(p.Exec.Command, " "), attrs)
	case p.HTTPGet != nil:
		u := url.URL{Scheme: strings.ToLower(string(cmp.Or(p.HTTPGet.Scheme, pod.URISchemeHTTP))),
			Host: net.JoinHostPort(p.HTTPGet.Host, p.HTTPGet.Port.String()), Path: p.HTTPGet.Path}
		return fmt.Sprintf("http-get %s %s", u.String(), attrs)
	case p.TCPSocket != nil:
		return fmt.Sprintf("tcp-socket %s %s", net.JoinHostPort(p.TCPSocket.Host, p.TCPSocket.Port.String()), attrs)
	case p.GRPC != nil:
		service := ""
		if p.GRPC.Service != nil {
			service = *p.GRPC.Service
		}
		return fmt.Sprintf("grpc <pod>:%d %s %s", p.GRPC.Port, service, attrs)
	}
	return "unknown " + attrs
}

// writeEnv writes a container's environment as kubectl does: literal
// values as written, and for a value from elsewhere where it comes from.
// The values of Secrets are never shown: the API does not serve them.
func writeEnv(w describeWriter, c *pod.Container) {
	if len(c.EnvFrom) > 0 {
		w.line(2, "Environment Variables from:")
		for _, f := range c.EnvFrom {
			name, kind, optional := "", "", (*bool)(nil)
			switch {
			case f.ConfigMapRef != nil:
				name, kind, optional = f.ConfigMapRef.Name, "ConfigMap", f.ConfigMapRef.Optional
			case f.SecretRef != nil:
				name, kind, optional = f.SecretRef.Name, "Secret", f.SecretRef.Optional
			}
			if f.Prefix != "" {
				kind += " with prefix '" + f.Prefix + "'"
			}
			w.line(3, "%s\t%s\tOptional: %t", name, kind, optional != nil && *optional)
		}
	}
	if len(c.Env) == 0 {
		w.line(2, "Environment:\t<none>")
		return
	}
	w.line(2, "Environment:")
	for _, e := range c.Env {
		switch f := e.ValueFrom; {
		case f == nil:
			w.line(3, "%s:\t%s", e.Name, e.Value)
		case f.SecretKeyRef != nil:
			w.line(3, "%s:\t<set to the key '%s' in secret '%s'>\tOptional: %t", e.Name, f.SecretKeyRef.Key, f.SecretKeyRef.Name,
				f.SecretKeyRef.Optional != nil && *f.SecretKeyRef.Optional)
		case f.ConfigMapKeyRef != nil:
			w.line(3, "%s:\t<set to the key '%s' of config map '%s'>\tOptional: %t", e.Name, f.ConfigMapKeyRef.Key, f.ConfigMapKeyRef.Name,
				f.ConfigMapKeyRef.Optional != nil && *f.ConfigMapKeyRef.Optional)
		case f.FileKeyRef != nil:
			w.line(3, "%s:\t<set to the key '%s' from file '%s' in volume '%s'>\tOptional: %t", e.Name, f.FileKeyRef.Key, f.FileKeyRef.Path,
				f.FileKeyRef.VolumeName, f.FileKeyRef.Optional != nil && *f.FileKeyRef.Optional)
		case f.FieldRef != nil:
			w.line(3, "%s:\t (%s:%s)", e.Name, cmp.Or(f.FieldRef.APIVersion, "v1"), f.FieldRef.FieldPath)
		case f.ResourceFieldRef != nil:
			r := f.ResourceFieldRef
			w.line(3, "%s:\t (%s)", e.Name, cmp.Or(r.ContainerName, c.Name)+":"+r.Resource)
		}
	}
}

// writeMounts writes a container's mounts, by path: "/data from data (rw)".
func writeMounts(w describeWriter, mounts []pod.VolumeMount) {
	if len(mounts) == 0 {
		w.line(2, "Mounts:\t<none>")
		return
	}
	w.line(2, "Mounts:")
	sorted := slices.Clone(mounts)
	slices.SortStableFunc(sorted, func(a, b pod.VolumeMount) int { return strings.Compare(a.MountPath, b.MountPath) })
	for _, m := range sorted {
		flags := []string{"rw"}
		if m.ReadOnly {
			flags[0] = "ro"
		}
		if m.SubPath != "" {
			flags = append(flags, fmt.Sprintf("path=%q", m.SubPath))
		}
		w.line(3, "%s from %s (%s)", m.MountPath, m.Name, strings.Join(flags, ","))
	}
}

// writeVolumes writes the Volumes section: each volume's type and source.
func writeVolumes(w describeWriter, vols []pod.Volume) {
	if len(vols) == 0 {
		w.line(0, "Volumes:\t<none>")
		return
	}
	w.line(0, "Volumes:")
	optional := func(b *bool) string {
		if b == nil {
			return "false"
		}
		return fmt.Sprint(*b)
	}
	for _, v := range vols {
		w.line(1, "%s:", v.Name)
		switch {
		case v.HostPath != nil:
			w.line(2, "Type:\tHostPath (bare host directory volume)")
			w.line(2, "Path:\t%s", v.HostPath.Path)
			w.line(2, "HostPathType:\t%s", string(v.HostPath.Type))
		case v.EmptyDir != nil:
			w.line(2, "Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)")
			w.line(2, "Medium:\t%s", string(v.EmptyDir.Medium))
			limit := "<unset>"
			if v.EmptyDir.SizeLimit != nil {
				limit = v.EmptyDir.SizeLimit.String()
			}
			w.line(2, "SizeLimit:\t%s", limit)
		case v.ConfigMap != nil:
			w.line(2, "Type:\tConfigMap (a volume populated by a ConfigMap)")
			w.line(2, "Name:\t%s", v.ConfigMap.Name)
			w.line(2, "Optional:\t%s", optional(v.ConfigMap.Optional))
		case v.Secret != nil:
			w.line(2, "Type:\tSecret (a volume populated by a Secret)")
			w.line(2, "SecretName:\t%s", v.Secret.SecretName)
			w.line(2, "Optional:\t%s", optional(v.Secret.Optional))
		case v.Projected != nil:
			w.line(2, "Type:\tProjected (a volume that contains injected data from multiple sources)")
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					w.line(2, "ConfigMapName:\t%s", s.ConfigMap.Name)
					w.line(2, "ConfigMapOptional:\t%s", optional(s.ConfigMap.Optional))
				case s.Secret != nil:
					w.line(2, "SecretName:\t%s", s.Secret.Name)
					w.line(2, "SecretOptional:\t%s", optional(s.Secret.Optional))
				case s.DownwardAPI != nil:
					w.line(2, "DownwardAPI:\ttrue")
				}
			}
		case v.DownwardAPI != nil:
			w.line(2, "Type:\tDownwardAPI (a volume populated by information about the pod)")
			w.line(2, "Items:")
			for _, it := range v.DownwardAPI.Items {
				switch {
				case it.FieldRef != nil:
					w.line(3, "%s -> %s", it.FieldRef.FieldPath, it.Path)
				case it.ResourceFieldRef != nil:
					w.line(3, "%s -> %s", it.ResourceFieldRef.Resource, it.Path)
				}
			}
		case v.PersistentVolumeClaim != nil:
			w.line(2, "Type:\tPersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)")
			w.line(2, "ClaimName:\t%s", v.PersistentVolumeClaim.ClaimName)
			w.line(2, "ReadOnly:\t%t", v.PersistentVolumeClaim.ReadOnly)
		case v.Image != nil:
			w.line(2, "Type:\tImage (a container image or OCI artifact)")
			w.line(2, "Reference:\t%s", v.Image.Reference)
			w.line(2, "PullPolicy:\t%s", string(v.Image.PullPolicy))
		}
	}
}

// toleration writes a toleration as kubectl does: "key=value:Effect",
// "op=Exists", "for 300s".
func toleration(t pod.Toleration) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	if t.Effect != "" {
		s += ":" + t.Effect
	}
	if t.Operator == "Exists" && t.Value == "" {
		if s != "" {
			s += " "
		}
		s += "op=Exists"
	}
	if t.TolerationSeconds != nil {
		s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
	}
	return s
}

// writeHistory writes tug's rollout record of the pod ("tug history
// POD"): its last good spec, the spec held back, and its last specs.
func writeHistory(w describeWriter, h *pod.RolloutHistory, when func(time.Time) string) {
	w.line(0, "Rollout:")
	w.line(1, "Last Good Spec:\t%s", orNone(shortHash(h.GoodHash)))
	if h.Failed != "" {
		w.line(1, "Held Back:\t%s", shortHash(h.Failed)+" ("+h.Reason+")")
	}
	w.line(1, "History:")
	w.line(2, "Hash\tApplied\tOutcome\tReason")
	w.line(2, "----\t-------\t-------\t------")
	for _, e := range h.Entries {
		w.line(2, "%s\t%s\t%s\t%s", shortHash(e.Hash), when(e.Applied), e.Outcome, e.Reason)
	}
}

// writeEvents writes the pod's events as kubectl's table: Type, Reason,
// Age ("3s (x3 over 23s)" for a repeated one), From and Message.
func writeEvents(w describeWriter, evs []events.Event, now time.Time) {
	if len(evs) == 0 {
		w.line(0, "Events:\t<none>")
		return
	}
	w.line(0, "Events:")
	w.line(1, "Type\tReason\tAge\tFrom\tMessage")
	w.line(1, "----\t------\t----\t----\t-------")
	for _, e := range evs {
		age := api.HumanDuration(now.Sub(e.LastTimestamp))
		if e.Count > 1 {
			age = fmt.Sprintf("%s (x%d over %s)", age, e.Count, api.HumanDuration(now.Sub(e.FirstTimestamp)))
		}
		from := e.Source.Component
		if e.Source.Host != "" {
			from += ", " + e.Source.Host
		}
		w.line(1, "%s\t%s\t%s\t%s\t%s", e.Type, e.Reason, age, from, strings.TrimSpace(e.Message))
	}
}
