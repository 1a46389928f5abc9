package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"tug/internal/pod"
	"tug/internal/podview"
)

// PodWatchInterval is how often GET /pods?watch=true compares the pods with
// what it last sent. The StatusSource has no change notification (a pod's
// status is computed when asked), so a watch polls it; 250 ms keeps a
// change within a second of "tug pods -w" at four status computations a
// second per watcher.
const PodWatchInterval = 250 * time.Millisecond

// Watch event types, Kubernetes' names. WatchBookmark marks the end of a
// watch's initial ADDED events (Kubernetes' BOOKMARK with the
// k8s.io/initial-events-end annotation).
const (
	WatchAdded    = "ADDED"
	WatchModified = "MODIFIED"
	WatchDeleted  = "DELETED"
	WatchBookmark = "BOOKMARK"
)

// InitialEventsEnd is the annotation of the BOOKMARK that follows a watch's
// initial events.
const InitialEventsEnd = "k8s.io/initial-events-end"

// PodWatchEvent is one line of GET /pods?watch=true: Kubernetes' watch
// shape, the pod as GET /pods/{namespace}/{name} shows it.
type PodWatchEvent struct {
	Type   string       `json:"type"`
	Object podview.View `json:"object"`
}

// watchedPod is a pod as a watch last saw it: its view and the view's JSON,
// which is what the diff compares (a change a client could see, and
// nothing else).
type watchedPod struct {
	view podview.View
	json []byte
}

// podSnapshot keys the pods of namespace ns ("" for all) by UID.
func podSnapshot(pods []podview.View, ns string) map[string]watchedPod {
	out := make(map[string]watchedPod, len(pods))
	for _, v := range pods {
		if ns != "" && v.Metadata.Namespace != ns {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			continue // cannot be sent either; seen again at the next poll
		}
		out[v.Metadata.UID] = watchedPod{view: v, json: b}
	}
	return out
}

// diffPods returns the watch events that take a client from old to cur:
// ADDED for a pod only in cur, DELETED (with its last view) for one only in
// old, MODIFIED for one whose view changed; sorted by namespace, name and
// UID. It does not modify its arguments.
func diffPods(old, cur map[string]watchedPod) []PodWatchEvent {
	var evs []PodWatchEvent
	for uid, p := range cur {
		prev, ok := old[uid]
		switch {
		case !ok:
			evs = append(evs, PodWatchEvent{Type: WatchAdded, Object: p.view})
		case !bytes.Equal(prev.json, p.json):
			evs = append(evs, PodWatchEvent{Type: WatchModified, Object: p.view})
		}
	}
	for uid, p := range old {
		if _, ok := cur[uid]; !ok {
			evs = append(evs, PodWatchEvent{Type: WatchDeleted, Object: p.view})
		}
	}
	slices.SortFunc(evs, func(a, b PodWatchEvent) int {
		return cmp.Or(
			strings.Compare(a.Object.Metadata.Namespace, b.Object.Metadata.Namespace),
			strings.Compare(a.Object.Metadata.Name, b.Object.Metadata.Name),
			strings.Compare(a.Object.Metadata.UID, b.Object.Metadata.UID),
		)
	})
	return evs
}

// watchPods is GET /pods?watch=true[&namespace=NS]: an ADDED event for
// each pod, a BOOKMARK, then the changes as JSON lines (PodWatchEvent),
// each within PodWatchInterval of the StatusSource showing it, until the
// client goes away.
func (s *Server) watchPods(w http.ResponseWriter, r *http.Request) {
	ns := r.URL.Query().Get("namespace")
	seen := podSnapshot(s.pods(), ns)
	first := append(diffPods(nil, seen), PodWatchEvent{Type: WatchBookmark, Object: podview.View{APIVersion: "v1", Kind: "Pod",
		Metadata: pod.ObjectMeta{Annotations: map[string]string{InitialEventsEnd: "true"}}}})
	stream(w, r, first, func(ctx context.Context) ([]PodWatchEvent, error) {
		tick := time.NewTicker(PodWatchInterval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-tick.C:
			}
			cur := podSnapshot(s.pods(), ns)
			if evs := diffPods(seen, cur); len(evs) > 0 {
				seen = cur
				return evs, nil
			}
		}
	})
}

// WatchPods calls fn with an ADDED event for each pod of namespace ns (""
// for all), then a BOOKMARK event, then each change as tug sees it (ADDED,
// MODIFIED, DELETED), until ctx ends (it then returns nil), the agent goes
// away, or fn returns an error (returned as is).
func (c *Client) WatchPods(ctx context.Context, ns string, fn func(PodWatchEvent) error) error {
	v := url.Values{"watch": {"true"}}
	if ns != "" {
		v.Set("namespace", ns)
	}
	return watch(ctx, c, "/pods?"+v.Encode(), "pods", fn)
}
