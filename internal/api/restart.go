package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"tug/internal/pod"
	"tug/internal/podview"
)

// Restarter restarts running containers of a pod as the kubelet does after
// a failed liveness probe (implemented by reconcile.Loop). It must be safe
// for concurrent use.
type Restarter interface {
	// Restart asks for the named containers of pod uid to be stopped (with
	// the pod's grace period, preStop hook first) and started again as a
	// new attempt, and returns once the request is recorded. Each must be
	// running.
	Restart(uid string, containers []string) error
}

// RestartAnswer is the answer of POST .../restart.
type RestartAnswer struct {
	Pod        string   `json:"pod"`
	Containers []string `json:"containers"`
	Status     string   `json:"status"`
}

// restartTargets returns the containers of v that POST .../restart?container=
// name restarts: name, or every running app container and sidecar when
// name is empty. A container v does not have, that does not run, or that
// is an init container other than a sidecar is refused.
func restartTargets(v podview.View, name string) ([]string, error) {
	restartable := map[string]bool{}
	for _, c := range v.Spec.Containers {
		restartable[c.Name] = true
	}
	init := map[string]bool{}
	for _, c := range v.Spec.InitContainers {
		restartable[c.Name] = c.IsSidecar()
		init[c.Name] = !c.IsSidecar()
	}
	running := map[string]bool{}
	var all []string
	for _, cs := range append(append([]pod.ContainerStatus(nil), v.Status.InitContainerStatuses...), v.Status.ContainerStatuses...) {
		running[cs.Name] = cs.State.Running != nil
		if restartable[cs.Name] && running[cs.Name] {
			all = append(all, cs.Name)
		}
	}
	switch {
	case name == "" && len(all) == 0:
		return nil, fmt.Errorf("no container of pod %s is running: %w", v.Metadata.Name, ErrConflict)
	case name == "":
		return all, nil
	case init[name]:
		return nil, fmt.Errorf("container %s is an init container: only app containers and sidecars restart: %w", name, ErrBadRequest)
	case !restartable[name]:
		return nil, fmt.Errorf("container %s is not valid for pod %s: %w", name, v.Metadata.Name, ErrBadRequest)
	case !running[name]:
		return nil, fmt.Errorf("container %s is not running: %w", name, ErrConflict)
	}
	return []string{name}, nil
}

// restartPod serves POST /pods/{namespace}/{name}/restart?container=.
func (s *Server) restartPod(w http.ResponseWriter, r *http.Request) {
	v, err := findPod(s.pods(), r.PathValue("namespace"), r.PathValue("name"))
	var names []string
	if err == nil {
		names, err = restartTargets(v, r.URL.Query().Get("container"))
	}
	if err == nil && s.Restarts == nil {
		err = fmt.Errorf("this tug cannot restart containers: %w", ErrNotFound)
	}
	if err == nil {
		if err = s.Restarts.Restart(v.Metadata.UID, names); err != nil {
			err = fmt.Errorf("%s: %w: %w", v.Metadata.Name, err, ErrConflict)
		}
	}
	if err != nil {
		s.writeError(w, err)
		return
	}
	s.logger().Info("restart requested", "pod", v.Metadata.Namespace+"/"+v.Metadata.Name, "uid", v.Metadata.UID, "container", strings.Join(names, ","))
	s.writeJSON(w, http.StatusOK, RestartAnswer{Pod: v.Metadata.Namespace + "/" + v.Metadata.Name, Containers: names,
		Status: "restarting"})
}

// Restart asks tug to restart container of pod namespace/name (""
// for every running app container and sidecar) as a new attempt. It
// returns the containers being restarted; the error matches ErrNotFound,
// ErrBadRequest (no such container) or, as a *StatusError of code 409, a
// container that is not running.
func (c *Client) Restart(ctx context.Context, ns, name, container string) (RestartAnswer, error) {
	path := "/pods/" + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/restart"
	if container != "" {
		path += "?container=" + url.QueryEscape(container)
	}
	var out RestartAnswer
	err := c.send(ctx, http.MethodPost, path, &out)
	return out, err
}
