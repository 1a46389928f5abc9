package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"tug/internal/podview"

	"github.com/prometheus/client_golang/prometheus"
)

// StatusSource is what the API reads; the agent implements it. Both methods
// must be safe for concurrent use and return slices the caller may keep and
// modify.
type StatusSource interface {
	// Pods returns every pod tug manages, with its status.
	Pods() []podview.View
	// Manifests returns the state of every manifest file of every source,
	// broken ones included.
	Manifests() []podview.ManifestStatus
}

// HealthChecker says whether tug works: its PLEG relists and containerd
// answers. It must be safe for concurrent use and honour ctx.
type HealthChecker interface {
	Healthy(ctx context.Context) error
}

// healthTimeout bounds one health check, so that a hung containerd makes
// /healthz fail instead of hang.
const healthTimeout = 5 * time.Second

// Server serves the status API. Its zero value serves an empty, healthy
// node; set the fields before the first call and do not change them after.
// It is safe for concurrent use when its StatusSource and HealthChecker are.
type Server struct {
	// Status supplies pods and manifests; nil means none.
	Status StatusSource
	// Health is asked by /healthz and /readyz; nil means always healthy.
	Health HealthChecker
	// Node supplies GET /node; nil means a node with no conditions.
	Node NodeSource
	// Log receives listener events and failed writes; nil discards them.
	Log *slog.Logger
	// Registry is served on /metrics; the server registers its own
	// collectors on it (the status gauges, the pods' and the node's
	// kube-state-metrics series and kubelet_http_requests_total) when it
	// first builds a handler. nil: a registry of the server's own.
	Registry *prometheus.Registry
	// Sources reports the manifest sources' readiness for /metrics; nil
	// means none.
	Sources SourceLister
	// Events serves GET /events and the last events of GET /pods/...;
	// nil means none.
	Events EventSource
	// IdleTimeout closes a keep-alive connection that sends no new request
	// for this long, on both listeners. Default DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Rollouts serves the rollback and history endpoints; nil: none.
	Rollouts RolloutSource
	// Stats serves GET /stats/summary; nil: no pod has usage to show.
	Stats StatsSource
	// LogsDir is the pod logs directory (--pod-logs-dir) the log endpoint
	// reads; empty: no container has logs.
	LogsDir string
	// Journal, when set, is where the log endpoint reads instead (the
	// "journald" log driver alone: no CRI files), by container ID.
	Journal JournalLogs
	// Exec runs the commands of POST .../exec; nil: exec is refused.
	Exec Execer
	// Restarts serves POST .../restart; nil: restarts are refused.
	Restarts Restarter

	metricsOnce sync.Once
	requests    *prometheus.CounterVec
}

// DefaultIdleTimeout is the default Server.IdleTimeout.
const DefaultIdleTimeout = 60 * time.Second

// Handler returns the full API, meant for the root-only unix socket:
//
//	GET /healthz                   200 "ok", or 500 with the reason
//	GET /readyz                    the same, for now
//	GET /metrics                   Prometheus text format
//	GET /pods                      a PodList, sorted by namespace and name
//	GET /pods?watch=true           the pods, then their changes as JSON lines (?namespace=)
//	GET /pods/{namespace}/{name}   one pod, by static name or manifest name
//	GET /manifests                 {"items": [ManifestStatus...]}
//	GET /pods/{namespace}/{name}/log  a container's output, as kubectl logs
//	    (?container=&follow=&previous=&tailLines=&sinceSeconds=&timestamps=)
//	GET /node                      the node and its pressure conditions
//	GET /stats/summary             the running containers' CPU and memory usage
//	GET /events                    an EventList, oldest first (?namespace=&pod=&watch=true)
//	POST /pods/{namespace}/{name}/rollback  return the pod to its last good spec
//	GET /pods/{namespace}/{name}/history    the pod's rollout history
//	POST /manifests/rollback?file=F         return a file's pods to its last good content
//	POST /pods/{namespace}/{name}/exec      run a command in a container, as kubectl exec
//	    (?container=&tty=&stdin=&command=NAME&command=ARG...; Upgrade: tug-exec, see the package doc)
//	POST /pods/{namespace}/{name}/restart   restart the pod's running containers (?container=: one)
//
// Errors are JSON objects {"error": "..."}.
func (s *Server) Handler() http.Handler { return s.handler(nil) }

// handler is Handler; sessions, when not nil, tracks the exec sessions so
// that the server's shutdown ends them.
func (s *Server) handler(sessions *execSessions) http.Handler {
	mux := http.NewServeMux()
	s.healthRoutes(mux)
	mux.HandleFunc("GET /pods", s.listPods)
	mux.HandleFunc("GET /pods/{namespace}/{name}", s.getPod)
	mux.HandleFunc("GET /manifests", s.listManifests)
	mux.HandleFunc("GET /pods/{namespace}/{name}/log", s.getLog)
	mux.HandleFunc("GET /node", s.getNode)
	mux.HandleFunc("GET /stats/summary", s.statsSummary)
	mux.HandleFunc("GET /events", s.listEvents)
	mux.HandleFunc("POST /pods/{namespace}/{name}/rollback", s.rollbackPod)
	mux.HandleFunc("GET /pods/{namespace}/{name}/history", s.podHistory)
	mux.HandleFunc("POST /manifests/rollback", s.rollbackFile)
	mux.HandleFunc("POST /pods/{namespace}/{name}/exec", s.execHandler(sessions))
	mux.HandleFunc("POST /pods/{namespace}/{name}/restart", s.restartPod)
	return s.counted("socket", mux)
}

// HealthHandler returns only /healthz, /readyz and /metrics, meant for the
// loopback TCP listener.
func (s *Server) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	s.healthRoutes(mux)
	return s.counted("health", mux)
}

func (s *Server) healthRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.healthz)
	mux.HandleFunc("GET /metrics", s.metrics)
}

func (s *Server) logger() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

func (s *Server) pods() []podview.View {
	if s.Status == nil {
		return nil
	}
	return s.Status.Pods()
}

func (s *Server) manifests() []podview.ManifestStatus {
	if s.Status == nil {
		return nil
	}
	return s.Status.Manifests()
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if s.Health != nil {
		ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
		defer cancel()
		if err := s.Health.Healthy(ctx); err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintln(w, err)
			return
		}
	}
	fmt.Fprintln(w, "ok")
}

func (s *Server) listPods(w http.ResponseWriter, r *http.Request) {
	if watch, _ := strconv.ParseBool(r.URL.Query().Get("watch")); watch {
		s.watchPods(w, r)
		return
	}
	items := s.pods()
	if items == nil {
		items = []podview.View{}
	}
	slices.SortFunc(items, func(a, b podview.View) int {
		return cmp.Or(
			strings.Compare(a.Metadata.Namespace, b.Metadata.Namespace),
			strings.Compare(a.Metadata.Name, b.Metadata.Name),
			strings.Compare(a.Metadata.UID, b.Metadata.UID),
		)
	})
	s.writeJSON(w, http.StatusOK, podview.List{APIVersion: "v1", Kind: "PodList", Items: items})
}

func (s *Server) getPod(w http.ResponseWriter, r *http.Request) {
	v, err := findPod(s.pods(), r.PathValue("namespace"), r.PathValue("name"))
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, v)
}

// manifestList is the body of GET /manifests.
type manifestList struct {
	Items []podview.ManifestStatus `json:"items"`
}

func (s *Server) listManifests(w http.ResponseWriter, r *http.Request) {
	items := s.manifests()
	if items == nil {
		items = []podview.ManifestStatus{}
	}
	slices.SortFunc(items, func(a, b podview.ManifestStatus) int {
		return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.File, b.File))
	})
	s.writeJSON(w, http.StatusOK, manifestList{Items: items})
}

// findPod returns the pod of namespace ns whose static name is name or,
// failing that, the one pod whose manifest name (as written) is name.
func findPod(pods []podview.View, ns, name string) (podview.View, error) {
	var byName, byManifest []podview.View
	for _, v := range pods {
		if v.Metadata.Namespace != ns {
			continue
		}
		if v.Metadata.Name == name {
			byName = append(byName, v)
		}
		if v.Metadata.ManifestName == name {
			byManifest = append(byManifest, v)
		}
	}
	matches := byName
	if len(matches) == 0 {
		matches = byManifest
	}
	switch len(matches) {
	case 0:
		return podview.View{}, fmt.Errorf("pod %q not found in namespace %q: %w", name, ns, ErrNotFound)
	case 1:
		return matches[0], nil
	}
	var names []string
	for _, v := range matches {
		names = append(names, fmt.Sprintf("%s (uid %s)", v.Metadata.Name, v.Metadata.UID))
	}
	return podview.View{}, fmt.Errorf("%q matches %d pods in namespace %q: %s: %w",
		name, len(matches), ns, strings.Join(names, ", "), ErrAmbiguous)
}

// errorBody is the body of every error answer.
type errorBody struct {
	Error string `json:"error"`
}

// writeError answers with the status code err stands for and its text,
// without the package prefix of the sentinel.
func (s *Server) writeError(w http.ResponseWriter, err error) {
	code, sentinel := http.StatusInternalServerError, error(nil)
	switch {
	case errors.Is(err, ErrNotFound):
		code, sentinel = http.StatusNotFound, ErrNotFound
	case errors.Is(err, ErrAmbiguous):
		code, sentinel = http.StatusConflict, ErrAmbiguous
	case errors.Is(err, ErrConflict):
		code, sentinel = http.StatusConflict, ErrConflict
	case errors.Is(err, ErrBadRequest):
		code, sentinel = http.StatusBadRequest, ErrBadRequest
	}
	msg := err.Error()
	if sentinel != nil {
		msg = strings.TrimSuffix(msg, ": "+sentinel.Error())
	}
	s.writeJSON(w, code, errorBody{Error: msg})
}

func (s *Server) writeJSON(w http.ResponseWriter, code int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		s.logger().Error("encode API answer", "err", err)
		code = http.StatusInternalServerError
		body = []byte(`{"error": "cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if _, err := w.Write(append(body, '\n')); err != nil {
		s.logger().Debug("write API answer", "err", err)
	}
}
