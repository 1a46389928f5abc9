package podvalidate

import (
	"strings"

	"tug/internal/fieldpath"
	"tug/internal/pod"
)

// Probe and lifecycle-hook validation, as Kubernetes' (validateProbe,
// validateHandler, validateLifecycle), plus one check of tug's: a port
// given by name must name one of the container's ports (the kubelet would
// fail the probe forever; tug refuses the manifest instead).

// probes checks a container's probes and hooks at path p. init is true
// for an init container: only a sidecar may have them.
func (v *validator) probes(p string, c *pod.Container, init bool) {
	plain := init && !c.IsSidecar()
	for _, pr := range []struct {
		field string
		probe *pod.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
		if pr.probe == nil {
			continue
		}
		pp := p + "." + pr.field
		if plain {
			v.fail(pp, "may not be set for init containers (only for a sidecar: restartPolicy: Always)")
			continue
		}
		v.probe(pp, pr.field, pr.probe, c.Ports)
	}
	if c.Lifecycle == nil {
		return
	}
	if plain {
		v.fail(p+".lifecycle", "may not be set for init containers (only for a sidecar: restartPolicy: Always)")
		return
	}
	if h := c.Lifecycle.PostStart; h != nil {
		v.lifecycleHandler(p+".lifecycle.postStart", h, c.Ports)
	}
	if h := c.Lifecycle.PreStop; h != nil {
		v.lifecycleHandler(p+".lifecycle.preStop", h, c.Ports)
	}
}

func (v *validator) probe(p, field string, pr *pod.Probe, ports []pod.ContainerPort) {
	v.handler(p, pr.Handler(), ports)
	for _, f := range []struct {
		name string
		val  int32
		min  int32
	}{
		{"initialDelaySeconds", pr.InitialDelaySeconds, 0},
		{"timeoutSeconds", pr.TimeoutSeconds, 1},
		{"periodSeconds", pr.PeriodSeconds, 1},
		{"successThreshold", pr.SuccessThreshold, 1},
		{"failureThreshold", pr.FailureThreshold, 1},
	} {
		if f.val < f.min {
			v.fail(p+"."+f.name, "must be at least %d", f.min)
		}
	}
	if field != "readinessProbe" && pr.SuccessThreshold > 1 {
		v.fail(p+".successThreshold", "must be 1 for a %s", field)
	}
	if g := pr.TerminationGracePeriodSeconds; g != nil {
		switch {
		case field == "readinessProbe":
			v.fail(p+".terminationGracePeriodSeconds", "must not be set for a readinessProbe (it never kills the container)")
		case *g <= 0:
			v.fail(p+".terminationGracePeriodSeconds", "must be greater than 0")
		}
	}
}

func (v *validator) lifecycleHandler(p string, h *pod.LifecycleHandler, ports []pod.ContainerPort) {
	hd := h.Handler()
	if h.Sleep != nil {
		if hd.Kind() != "" {
			v.fail(p, "may not specify more than 1 handler type")
			return
		}
		if h.Sleep.Seconds < 0 {
			v.fail(p+".sleep.seconds", "must be at least 0")
		}
		return
	}
	v.handler(p, hd, ports)
}

// handler checks that exactly one action is set, and the action.
func (v *validator) handler(p string, h pod.ProbeHandler, ports []pod.ContainerPort) {
	n := 0
	for _, set := range []bool{h.Exec != nil, h.HTTPGet != nil, h.TCPSocket != nil, h.GRPC != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		v.fail(p, "must specify a handler type (exec, httpGet, tcpSocket or grpc)")
		return
	case n > 1:
		v.fail(p, "may not specify more than 1 handler type")
		return
	}
	switch {
	case h.Exec != nil:
		if len(h.Exec.Command) == 0 {
			v.fail(p+".exec.command", "required")
		}
	case h.HTTPGet != nil:
		g := h.HTTPGet
		v.port(p+".httpGet.port", g.Port, ports)
		switch g.Scheme {
		case pod.URISchemeHTTP, pod.URISchemeHTTPS:
		default:
			v.fail(p+".httpGet.scheme", "unsupported value %q: must be \"HTTP\" or \"HTTPS\"", g.Scheme)
		}
		if !strings.HasPrefix(g.Path, "/") {
			v.fail(p+".httpGet.path", "must start with '/'")
		}
		for i, hd := range g.HTTPHeaders {
			hp := fieldpath.Index(p+".httpGet.httpHeaders", i) + ".name"
			if hd.Name == "" || !validHeaderName(hd.Name) {
				v.fail(hp, "invalid HTTP header name %q", hd.Name)
			}
		}
	case h.TCPSocket != nil:
		v.port(p+".tcpSocket.port", h.TCPSocket.Port, ports)
	case h.GRPC != nil:
		if h.GRPC.Port < 1 || h.GRPC.Port > 65535 {
			v.fail(p+".grpc.port", "must be between 1 and 65535, inclusive")
		}
	}
}

func (v *validator) port(p string, port pod.IntOrString, ports []pod.ContainerPort) {
	if !port.IsString {
		if port.IntVal < 1 || port.IntVal > 65535 {
			v.fail(p, "must be between 1 and 65535, inclusive")
		}
		return
	}
	if !pod.IsIANASvcName(port.StrVal) {
		v.fail(p, "invalid port name %q: %s", port.StrVal, pod.IANASvcNameMsg)
		return
	}
	if _, ok := pod.ResolvePort(port, ports); !ok {
		v.fail(p, "no port of the container is named %q", port.StrVal)
	}
}

// validHeaderName reports whether s is an HTTP header field name (a token).
func validHeaderName(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r)
	}) < 0
}
