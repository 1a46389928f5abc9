package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"tug/internal/events"
)

// EventSource is the event ring the API reads (events.Ring implements it).
// Both methods must be safe for concurrent use and return slices the caller
// may keep.
type EventSource interface {
	// List returns the events with Seq > after, oldest first.
	List(after uint64) []events.Event
	// Wait is List, blocking until there is one or ctx ends.
	Wait(ctx context.Context, after uint64) ([]events.Event, error)
}

// EventList is the body of GET /events.
type EventList struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Items      []events.Event `json:"items"`
}

// WatchEvent is one line of GET /events?watch=true: Kubernetes' watch
// shape, with Type "ADDED" for a new event and "MODIFIED" for a repeat
// (Count > 1).
type WatchEvent struct {
	Type   string       `json:"type"`
	Object events.Event `json:"object"`
}

// eventFilter is the query of GET /events: namespace, pod (its static
// name) and uid, each "" for any.
type eventFilter struct{ namespace, pod, uid string }

func (f eventFilter) match(e events.Event) bool {
	o := e.InvolvedObject
	return (f.namespace == "" || o.Namespace == f.namespace) && (f.pod == "" || o.Name == f.pod) && (f.uid == "" || o.UID == f.uid)
}

func (f eventFilter) apply(evs []events.Event) []events.Event {
	out := make([]events.Event, 0, len(evs))
	for _, e := range evs {
		if f.match(e) {
			out = append(out, e)
		}
	}
	return out
}

// listEvents is GET /events: the recent events, oldest first, or with
// watch=true those and then each new one as a JSON line (WatchEvent) until
// the client goes away.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := eventFilter{namespace: q.Get("namespace"), pod: q.Get("pod"), uid: q.Get("uid")}
	watch, _ := strconv.ParseBool(q.Get("watch"))
	var evs []events.Event
	if s.Events != nil {
		evs = s.Events.List(0)
	}
	if !watch {
		s.writeJSON(w, http.StatusOK, EventList{APIVersion: "v1", Kind: "EventList", Items: f.apply(evs)})
		return
	}
	var last uint64
	batch := func(evs []events.Event) []WatchEvent {
		out := make([]WatchEvent, 0, len(evs))
		for _, e := range evs {
			last = max(last, e.Seq)
			if !f.match(e) {
				continue
			}
			typ := "ADDED"
			if e.Count > 1 {
				typ = "MODIFIED"
			}
			out = append(out, WatchEvent{Type: typ, Object: e})
		}
		return out
	}
	stream(w, r, batch(evs), func(ctx context.Context) ([]WatchEvent, error) {
		if s.Events == nil {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		evs, err := s.Events.Wait(ctx, last)
		return batch(evs), err
	})
}

// stream answers a watch request: 200, then first and each batch next
// returns, one JSON value a line, flushed after each batch, until the
// client goes away (the request's context ends, which next must honour)
// or next fails. The socket's server has no write timeout (see Serve), so
// a watch lasts as long as the client wants; keep-alive's idle timeout
// does not apply to a request in progress.
func stream[T any](w http.ResponseWriter, r *http.Request, first []T, next func(ctx context.Context) ([]T, error)) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	rc := http.NewResponseController(w)
	batch := first
	for {
		for _, v := range batch {
			if err := enc.Encode(v); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
		var err error
		if batch, err = next(r.Context()); err != nil {
			return
		}
	}
}
