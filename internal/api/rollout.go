package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"tug/internal/pod"
)

// RolloutSource is the rollout controller as the API sees it (implemented
// by rollout.Controller).
type RolloutSource interface {
	// Rollback returns pod uid to its last good spec.
	Rollback(uid string) error
	// History returns pod uid's rollout state and last specs.
	History(uid string) (pod.RolloutHistory, error)
}

// rolloutAccepted is the answer of POST .../rollback.
type rolloutAccepted struct {
	Pod    string `json:"pod"`
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
