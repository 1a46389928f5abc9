// Package podlabels owns the labels tug writes on the containerd
// containers it creates and reads back as a pod's container records
// (pod.RuntimeContainer): the pod's and the container's identity, the spec
// hash, the attempt, the pod cgroup, the resources applied, and the start
// and exit that outlive the task and tug (ForContainer, Record, Exit,
// ReadExit), and the containerd IDs of a pod's containers (ContainerID).
// containerd is the source of truth: a restarted tug finds its containers
// by these labels.
package podlabels

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"tug/internal/pod"
)

// Labels tug puts on each of its containers. The identity labels are set at
// creation; the state labels are added later (start time after the task
// starts, exit code and time when tug deletes the task, the OOM flag when
// containerd reports an OOM kill in the container: podruntime's WatchEvents), so that
// the state outlives the task and tug.
const (
	// Prefix starts every label tug writes.
	Prefix            = "io.tug."
	LabelPodUID       = Prefix + "pod.uid"
	LabelPodName      = Prefix + "pod.name"
	LabelPodNamespace = Prefix + "pod.namespace"
	LabelPodSource    = Prefix + "pod.source"
	LabelPodGrace     = Prefix + "pod.grace-seconds"
	LabelContainer    = Prefix + "container.name"
	LabelInit         = Prefix + "container.init"
	LabelSpecHash     = Prefix + "container.hash"
	LabelAttempt      = Prefix + "container.attempt"
	LabelRestartCount = Prefix + "container.restart-count"
	LabelImageID      = Prefix + "image.id"
	// LabelImageVolumePrefix + a volume's name holds the image ID
	// ("name@digest") of the image volume the container mounts.
	LabelImageVolumePrefix = Prefix + "image-volume-id."
	// LabelCgroupParent is the pod cgroup the container was created in
	// (pod.Sandbox.CgroupParent), so that a container left in the cgroup of
	// the pod's earlier QoS class is seen and recreated.
	LabelCgroupParent = Prefix + "cgroup-parent"
	LabelStartedAt    = Prefix + "started-at"
	LabelExitCode     = Prefix + "exit-code"
	LabelFinishedAt   = Prefix + "finished-at"
	// LabelOOMKilled is "true" once containerd reported an OOM kill in the
	// container's cgroup (a /tasks/oom event) during this attempt, as
	// containerd's CRI records reason OOMKilled.
	LabelOOMKilled = Prefix + "oom-killed"
	// LabelResources is the JSON of the container's resources as last
	// applied to it (at creation, or by an in-place resize): its
	// allocated resources.
	LabelResources = Prefix + "container.resources"
	// LabelCronJobUID and LabelCronJobSlot are set on the containers of a
	// CronJob's run: the UID of its CronJob's template pod and its slot
	// (RFC 3339, UTC), from which a lost cronjob state is rebuilt
	// (CronJobRun).
	LabelCronJobUID  = Prefix + "cronjob.uid"
	LabelCronJobSlot = Prefix + "cronjob.slot"
)

// maxIDLen is containerd's limit on identifiers.
const maxIDLen = 76

// ForContainer returns the identity labels of container c of pod p.
func ForContainer(p *pod.Pod, c *pod.Container, init bool, attempt int, imageID, cgroupParent string) map[string]string {
	l := map[string]string{
		LabelCgroupParent: cgroupParent,
		LabelPodUID:       p.Metadata.UID,
		LabelPodName:      p.Metadata.Name,
		LabelPodNamespace: p.Metadata.Namespace,
		LabelPodSource:    p.Metadata.Source,
		LabelPodGrace:     strconv.FormatInt(int64(p.GracePeriod()/time.Second), 10),
		LabelContainer:    c.Name,
		LabelInit:         strconv.FormatBool(init),
		LabelSpecHash:     pod.ContainerHash(p, c),
		LabelAttempt:      strconv.Itoa(attempt),
		LabelRestartCount: strconv.Itoa(attempt),
		LabelImageID:      imageID,
		LabelResources:    Resources(c.Resources),
	}
	if p.CronJobUID != "" && !p.ScheduledTime.IsZero() {
		l[LabelCronJobUID] = p.CronJobUID
		l[LabelCronJobSlot] = p.ScheduledTime.UTC().Format(time.RFC3339)
	}
	return l
}

// CronJobRun returns the CronJob template's UID and the slot of the run
// whose container has labels; ok is false for a container of any other
// pod, or one whose labels do not parse.
func CronJobRun(labels map[string]string) (uid string, slot time.Time, ok bool) {
	uid = labels[LabelCronJobUID]
	slot, err := time.Parse(time.RFC3339, labels[LabelCronJobSlot])
	if uid == "" || err != nil || slot.IsZero() {
		return "", time.Time{}, false
	}
	return uid, slot.UTC(), true
}

// ImageVolumes returns the labels of a container's image volumes,
// from their image IDs by volume name.
func ImageVolumes(ids map[string]string) map[string]string {
	out := make(map[string]string, len(ids))
	for name, id := range ids {
		out[LabelImageVolumePrefix+name] = id
	}
	return out
}

// Resources is the value of LabelResources for r.
func Resources(r pod.Resources) string {
	b, err := json.Marshal(r)
	if err != nil {
		return "" // plain data: cannot fail
	}
	return string(b)
}

// Record fills the identity and label-held state fields of rc from
// labels. It reports false when the labels are not tug's.
func Record(labels map[string]string, rc *pod.RuntimeContainer) bool {
	uid, ok := labels[LabelPodUID]
	if !ok {
		return false
	}
	rc.PodUID = uid
	rc.PodName = labels[LabelPodName]
	rc.Namespace = labels[LabelPodNamespace]
	rc.PodSource = labels[LabelPodSource]
	if g, err := strconv.ParseInt(labels[LabelPodGrace], 10, 64); err == nil {
		rc.PodGrace = time.Duration(g) * time.Second
	}
	rc.Name = labels[LabelContainer]
	rc.Init = labels[LabelInit] == "true"
	rc.SpecHash = labels[LabelSpecHash]
	rc.Attempt, _ = strconv.Atoi(labels[LabelAttempt])
	rc.ImageID = labels[LabelImageID]
	rc.CgroupParent = labels[LabelCgroupParent]
	rc.StartedAt = parseTime(labels[LabelStartedAt])
	rc.OOMKilled = labels[LabelOOMKilled] == "true"
	var vols []string
	for k, v := range labels {
		if name, ok := strings.CutPrefix(k, LabelImageVolumePrefix); ok {
			vols = append(vols, name+"="+v)
		}
	}
	slices.Sort(vols)
	rc.ImageVolumes = strings.Join(vols, ",")
	if v := labels[LabelResources]; v != "" {
		var r pod.Resources
		if json.Unmarshal([]byte(v), &r) == nil {
			rc.Allocated = &r
		}
	}
	return true
}

// Exit records a task's exit on its container.
func Exit(code uint32, at time.Time) map[string]string {
	return map[string]string{
		LabelExitCode:   strconv.FormatUint(uint64(code), 10),
		LabelFinishedAt: at.UTC().Format(time.RFC3339Nano),
	}
}

// ReadExit returns the exit recorded by Exit, if any.
func ReadExit(labels map[string]string) (code int, at time.Time, ok bool) {
	s, ok := labels[LabelExitCode]
	if !ok {
		return 0, time.Time{}, false
	}
	code, err := strconv.Atoi(s)
	if err != nil {
		return 0, time.Time{}, false
	}
	return code, parseTime(labels[LabelFinishedAt]), true
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// podIDHashLen is how many hex digits of the pod's identity hash an ID
// carries (96 bits).
const podIDHashLen = 24

// ContainerID returns the containerd ID of an attempt of a pod's container:
// "<pod>_<container>_<hash>_<attempt>", readable and deterministic (a retry
// of a failed start reuses it). hash is the first 24 hex digits of the
// SHA-256 of the pod's namespace, name and UID, so that pods that differ in
// any of them never share an ID, whatever their names are cut to. Names are
// reduced to containerd's identifier alphabet (letters, digits, and single
// '.', '_' or '-' between them) and the pod name is cut so the whole fits in
// 76 characters. When the container name itself has to change, a short
// hash of the original keeps two containers of one pod apart.
//
// Containers created by earlier versions of tug carry IDs of another form
// ("<pod>_<container>_<uid first 8>_<attempt>"); they are found by their
// labels like any other, never by ID, so they are adopted unchanged.
func ContainerID(p *pod.Pod, containerName string, attempt int) string {
	h := sha256.Sum256([]byte(p.Metadata.Namespace + "\x00" + p.Metadata.Name + "\x00" + p.Metadata.UID))
	suffix := "_" + hex.EncodeToString(h[:])[:podIDHashLen] + "_" + strconv.Itoa(attempt)
	const maxContainer = 40
	ctr := sanitizeID(containerName)
	if ctr != containerName || len(ctr) > maxContainer {
		h := sha256.Sum256([]byte(containerName))
		ctr = trimID(ctr, maxContainer-7) + "-" + hex.EncodeToString(h[:3])
		ctr = strings.TrimLeft(ctr, "-")
	}
	podName := trimID(sanitizeID(p.Metadata.Name), maxIDLen-len(suffix)-len(ctr)-1)
	if podName == "" {
		return ctr + suffix
	}
	return podName + "_" + ctr + suffix
}

// OwnedBy reports whether a container's labels say it is container name of
// the pod with this UID.
func OwnedBy(labels map[string]string, uid, name string) bool {
	return labels[LabelPodUID] == uid && labels[LabelContainer] == name
}

// sanitizeID maps s onto containerd's identifier grammar
// ([A-Za-z0-9]+ separated by single '.', '_' or '-'): other characters
// become '-', runs of separators collapse to their first, and separators at
// either end are dropped.
func sanitizeID(s string) string {
	var b strings.Builder
	sep := true // at the start, a separator would be leading: drop it
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
			sep = false
		default:
			if sep {
				continue
			}
			if r != '.' && r != '_' && r != '-' {
				r = '-'
			}
			b.WriteRune(r)
			sep = true
		}
	}
	return strings.TrimRight(b.String(), "._-")
}

// trimID cuts an identifier to at most n bytes without leaving a trailing
// separator.
func trimID(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) > n {
		s = s[:n]
	}
	return strings.TrimRight(s, "._-")
}
