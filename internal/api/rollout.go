package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/redact"
)

// RolloutSource is the rollout controller as the API sees it (implemented
// by rollout.Controller).
type RolloutSource interface {
	// Rollback returns pod uid to its last good spec.
	Rollback(uid string) error
	// History returns pod uid's rollout state and last specs.
	History(uid string) (pod.RolloutHistory, error)
	// RollbackFile returns every pod of a manifest file (or URL bundle)
	// to the file's last good content.
	RollbackFile(o pod.Origin) error
}

// rolloutAccepted is the answer of POST .../rollback.
type rolloutAccepted struct {
	Pod    string `json:"pod,omitempty"`
	File   string `json:"file,omitempty"`
	Status string `json:"status"`
}

func (s *Server) rollbackPod(w http.ResponseWriter, r *http.Request) {
	v, err := findPod(s.pods(), r.PathValue("namespace"), r.PathValue("name"))
	if err == nil && s.Rollouts == nil {
		err = fmt.Errorf("this tug has no rollout controller: %w", ErrNotFound)
	}
	if err == nil {
		if err = s.Rollouts.Rollback(v.Metadata.UID); err != nil {
			err = fmt.Errorf("%s: %w: %w", v.Metadata.Name, err, ErrConflict)
		}
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, rolloutAccepted{Pod: v.Metadata.Namespace + "/" + v.Metadata.Name, Status: "rolling back to the last good spec"})
}

func (s *Server) podHistory(w http.ResponseWriter, r *http.Request) {
	v, err := findPod(s.pods(), r.PathValue("namespace"), r.PathValue("name"))
	if err == nil && s.Rollouts == nil {
		err = fmt.Errorf("this tug has no rollout controller: %w", ErrNotFound)
	}
	var h pod.RolloutHistory
	if err == nil {
		if h, err = s.Rollouts.History(v.Metadata.UID); err != nil {
			err = fmt.Errorf("%s: %w: %w", v.Metadata.Name, err, ErrNotFound)
		}
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, h)
}

// rollbackFile is POST /manifests/rollback?file=F: F is a manifest
// file's path or a manifest URL, as /manifests shows them (a URL given
// with its secrets matches its redacted form).
func (s *Server) rollbackFile(w http.ResponseWriter, r *http.Request) {
	want := r.URL.Query().Get("file")
	var found *podview.ManifestStatus
	for _, m := range s.manifests() {
		if want != "" && (m.File == want || m.File == redact.URL(want)) {
			found = &m
			break
		}
	}
	var err error
	switch {
	case found == nil:
		err = fmt.Errorf("no manifest file or URL %q: %w", redact.URL(want), ErrNotFound)
	case s.Rollouts == nil:
		err = fmt.Errorf("this tug has no rollout controller: %w", ErrNotFound)
	default:
		if err = s.Rollouts.RollbackFile(pod.Origin{Source: found.Source, File: found.File}); err != nil {
			err = fmt.Errorf("%s: %w: %w", found.File, err, ErrConflict)
		}
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.writeJSON(w, http.StatusOK, rolloutAccepted{File: found.File, Status: "rolling back to the file's last good content"})
}

// RollbackFile asks tug to return every pod of the manifest file (or URL)
// file to the file's last good content.
func (c *Client) RollbackFile(ctx context.Context, file string) error {
	var out rolloutAccepted
	return c.send(ctx, http.MethodPost, "/manifests/rollback?file="+url.QueryEscape(file), &out)
}

// Rollback asks tug to return pod namespace/name to its last good spec.
func (c *Client) Rollback(ctx context.Context, ns, name string) error {
	var out rolloutAccepted
	return c.send(ctx, http.MethodPost, "/pods/"+url.PathEscape(ns)+"/"+url.PathEscape(name)+"/rollback", &out)
}

// History returns the rollout history of pod namespace/name.
func (c *Client) History(ctx context.Context, ns, name string) (pod.RolloutHistory, error) {
	var h pod.RolloutHistory
	err := c.get(ctx, "/pods/"+url.PathEscape(ns)+"/"+url.PathEscape(name)+"/history", &h)
	return h, err
}
