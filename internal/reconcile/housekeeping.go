package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"tug/internal/pod"
	"tug/internal/podplan"
	"tug/internal/podview"
	"tug/internal/redact"
)

// housekeeping removes what belongs to pods that no source has any more:
// containers found by label (after a tug restart, say, the manifest was
// deleted while tug was down) and namespaces left by a crash half-way
// through setting a pod up. A pod is only removed once its source has
// reported, so a source that is slow at start (a URL that is down) never
// loses its pods. The pods of a source that is no longer configured (a
// removed or changed --manifest-url) are removed once every configured
// source has reported. It runs in Run's goroutine.
//
// Containers are checked on every turn (from the PLEG's cache, no call).
// Sandboxes, pod directories and claims are listed from the node (dirs,
// netlink, nftables, cgroups), which an idle agent should not do every
// two seconds: at the first turn, after a worker ended (a pod was removed
// or replaced) and every sandboxScanPeriod otherwise.
func (l *Loop) housekeeping(ctx context.Context, wg *sync.WaitGroup) {
	now := l.now.Now()
	for uid, at := range l.killed {
		if now.Sub(at) > time.Minute {
			delete(l.killed, uid)
		}
	}
	seen := map[string]bool{}
	for _, c := range l.cfg.Cache.All() {
		seen[c.PodUID] = true
		if l.workers[c.PodUID] != nil || !l.killed[c.PodUID].IsZero() {
			continue
		}
		ready, wanted := l.cfg.Desired.Owns(c.PodSource, c.PodUID)
		gone := !l.configured(c.PodSource)
		if gone {
			ready = l.allReported()
		}
		if !ready || wanted {
			continue
		}
		p := orphan(c)
		if gone {
			l.cfg.Log.Info("removing pod of a source that is no longer configured", "pod", p.FullName(), "uid", c.PodUID, "source", p.Metadata.Source)
		} else {
			l.cfg.Log.Info("removing pod that no source has", "pod", p.FullName(), "uid", c.PodUID, "source", p.Metadata.Source)
		}
		l.killed[c.PodUID] = now
		l.kill(l.start(ctx, wg, p), p)
	}
	if !l.rescan && now.Sub(l.scanned) < sandboxScanPeriod {
		return
	}
	l.rescan, l.scanned = false, now
	sandboxes := l.sandboxUIDs()
	for _, uid := range sandboxes {
		if seen[uid] || l.workers[uid] != nil || !l.unwanted(uid) {
			continue
		}
		l.cfg.Log.Info("removing sandbox of a pod that is gone", "uid", uid)
		if err := l.ops.removeSandbox(ctx, uid); err != nil {
			l.cfg.Log.Warn("housekeeping: remove orphaned sandbox", "uid", uid, "err", err)
		}
	}
	l.removePodDirs(seen, sandboxes)
	l.removeClaims()
}

// sandboxScanPeriod is how often housekeeping lists sandboxes, pod
// directories and claims when no worker ended in between.
const sandboxScanPeriod = 30 * time.Second

// removePodDirs removes the pod and log directories of pods that are gone
// and left nothing else: no container (seen), no worker, no sandbox piece
// (those go first, above; their directories on a later pass), not killed
// within the last minute, and no source wants them, once every source has
// reported.
func (l *Loop) removePodDirs(seen map[string]bool, sandboxes []string) {
	if l.cfg.PodDirs == nil || len(l.cfg.Sources) == 0 || !l.allReported() {
		return
	}
	uids, err := l.cfg.PodDirs.PodDirUIDs()
	if err != nil {
		l.cfg.Log.Warn("housekeeping: list pod directories", "err", err)
	}
	for _, uid := range uids {
		if seen[uid] || l.workers[uid] != nil || !l.killed[uid].IsZero() || slices.Contains(sandboxes, uid) || !l.unwanted(uid) {
			continue
		}
		l.cfg.Log.Info("removing the directories of a pod that is gone", "uid", uid)
		if err := l.cfg.PodDirs.RemovePodDirs(uid); err != nil {
			l.cfg.Log.Warn("housekeeping: remove pod directories", "uid", uid, "err", err)
		}
	}
}

// removeClaims removes the directories of the claims no source defines and
// no desired pod mounts. It is careful, as the data is the user's: nothing
// is removed before every source has reported, nor while a container of a
// pod no source wants still exists (a pod being removed may still write to
// its claim).
func (l *Loop) removeClaims() {
	if l.cfg.Claims == nil || l.cfg.ClaimDirs == nil || !l.allReported() {
		return
	}
	for _, c := range l.cfg.Cache.All() {
		if _, wanted := l.cfg.Desired.Owns(c.PodSource, c.PodUID); !wanted {
			return
		}
	}
	keep := map[pod.ClaimKey]bool{}
	for _, k := range l.cfg.Claims.Claims() {
		keep[k] = true
	}
	removed, err := l.cfg.ClaimDirs.RemoveClaims(keep)
	for _, dir := range removed {
		l.cfg.Log.Info("removed the directory of a claim: no source defines it and no pod uses it", "file", dir)
	}
	if err != nil {
		l.cfg.Log.Warn("housekeeping: remove claim directories", "err", err)
	}
}

// sandboxUIDs returns the UIDs that own namespaces, network pieces or a pod
// cgroup, whatever crash left them. Each List sees only this tug
// instance's own (its run dir, its containerd namespace's network objects,
// its cgroup root), so another tug on the host never loses its pods here.
func (l *Loop) sandboxUIDs() []string {
	set := map[string]bool{}
	for what, list := range map[string]func() ([]string, error){
		"namespaces": l.cfg.Sandbox.List,
		"network":    l.cfg.Network.List,
		"cgroups":    l.cfg.Cgroups.List,
	} {
		uids, err := list()
		if err != nil {
			l.cfg.Log.Warn("housekeeping: list "+what, "err", err)
		}
		for _, uid := range uids {
			set[uid] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// unwanted reports whether every source has reported and none wants the
// pod: only then is a sandbox with no container an orphan. (A pod whose
// containers are all gone, say while its image is pulled again, keeps its
// address across a tug restart while its URL source is still down.)
func (l *Loop) unwanted(uid string) bool {
	for _, src := range l.cfg.Sources {
		if ready, wanted := l.cfg.Desired.Owns(src, uid); !ready || wanted {
			return false
		}
	}
	return true
}

// configured reports whether source is one of the configured sources. With
// no list (tests), every source counts as configured.
func (l *Loop) configured(source string) bool {
	return len(l.cfg.Sources) == 0 || slices.Contains(l.cfg.Sources, source)
}

// allReported reports whether every configured source has reported.
func (l *Loop) allReported() bool {
	for _, src := range l.cfg.Sources {
		if ready, _ := l.cfg.Desired.Owns(src, ""); !ready {
			return false
		}
	}
	return true
}

// Orphans returns the pods that still have containers but whose source is
// no longer configured, with a status saying so (reason Orphaned), sorted
// by namespace/name: no source lists them any more, yet they run until
// housekeeping has removed them. Safe for concurrent use.
func (l *Loop) Orphans() []podview.View {
	if l.cfg.Cache == nil || l.cfg.Desired == nil {
		return nil
	}
	byUID := map[string][]pod.RuntimeContainer{}
	for _, c := range l.cfg.Cache.All() {
		if l.configured(c.PodSource) || l.isTerminating(c.PodUID) {
			continue // (one being removed is among Terminating's)
		}
		if _, wanted := l.cfg.Desired.Owns(c.PodSource, c.PodUID); !wanted {
			byUID[c.PodUID] = append(byUID[c.PodUID], c)
		}
	}
	now := l.now.Now()
	out := make([]podview.View, 0, len(byUID))
	for _, recs := range byUID {
		p := withRecorded(orphan(recs[0]), recs)
		st := computeStatus(p, recs, podNotes{}, now)
		st.Reason = pod.ReasonOrphaned
		st.Message = fmt.Sprintf("source %s is no longer configured: the pod is removed once the configured sources have reported", p.Metadata.Source)
		out = append(out, podview.View{APIVersion: "v1", Kind: "Pod", Metadata: p.Metadata, Spec: p.Spec, Status: st})
	}
	sortViews(out)
	return out
}

// sortViews sorts views by namespace/name, then UID.
func sortViews(views []podview.View) {
	slices.SortFunc(views, func(a, b podview.View) int {
		return cmp.Or(cmp.Compare(a.Metadata.Namespace, b.Metadata.Namespace), cmp.Compare(a.Metadata.Name, b.Metadata.Name), cmp.Compare(a.Metadata.UID, b.Metadata.UID))
	})
}

// withRecorded returns p, or, when p lists no app container (a pod
// rebuilt from its containers' labels by orphan), a copy of p with an app
// container for each of recs' names, as the records say.
func withRecorded(p *pod.Pod, recs []pod.RuntimeContainer) *pod.Pod {
	if len(p.Spec.Containers) > 0 {
		return p
	}
	cp := *p
	cp.Spec.Containers = nil
	for _, r := range recs {
		if !r.Init && !slices.ContainsFunc(cp.Spec.Containers, func(c pod.Container) bool { return c.Name == r.Name }) {
			cp.Spec.Containers = append(cp.Spec.Containers, pod.Container{Name: r.Name, Image: r.Image})
		}
	}
	return &cp
}

// orphan rebuilds, from a container's labels, as much of its pod as
// removing it needs.
func orphan(c pod.RuntimeContainer) *pod.Pod {
	p := &pod.Pod{APIVersion: "v1", Kind: "Pod"}
	p.Metadata = pod.ObjectMeta{Name: c.PodName, Namespace: c.Namespace, UID: c.PodUID, Source: redact.URL(c.PodSource)}
	grace := int64(c.PodGrace / time.Second)
	p.Spec.TerminationGracePeriodSeconds = &grace
	return p
}

// Status returns the pod's Kubernetes-shaped status, from the PLEG's cache
// and what the workers noted. Safe for concurrent use.
func (l *Loop) Status(p *pod.Pod) pod.Status {
	recs := l.cfg.Cache.PodContainers(p.Metadata.UID)
	now := l.now.Now()
	var st pod.Status
	l.notes.with(p.Metadata.UID, now, func(n *podNotes) {
		nn := *n
		nn.probes = l.hooks.status()
		st = computeStatus(p, recs, nn, now)
	})
	if l.cfg.Network != nil {
		if ip := l.cfg.Network.HostIP(); ip.IsValid() {
			st.HostIP = ip.String()
		}
	}
	if l.cfg.Cgroups != nil {
		st.QOSClass = l.cfg.Cgroups.QOSClass(podplan.Allocated(p, recs))
	}
	return st
}
