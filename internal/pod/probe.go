package pod

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Probe is a container's health check (livenessProbe, readinessProbe or
// startupProbe), with the fields of the Kubernetes v1 API. Exactly one
// handler (Exec, HTTPGet, TCPSocket, GRPC) is set. After SetDefaults the timing
// fields hold Kubernetes' defaults: timeoutSeconds 1, periodSeconds 10,
// successThreshold 1, failureThreshold 3.
type Probe struct {
	Exec      *ExecAction      `yaml:"exec" json:"exec,omitempty"`
	HTTPGet   *HTTPGetAction   `yaml:"httpGet" json:"httpGet,omitempty"`
	TCPSocket *TCPSocketAction `yaml:"tcpSocket" json:"tcpSocket,omitempty"`
	GRPC      *GRPCAction      `yaml:"grpc" json:"grpc,omitempty"`

	InitialDelaySeconds int32 `yaml:"initialDelaySeconds" json:"initialDelaySeconds,omitempty"`
	TimeoutSeconds      int32 `yaml:"timeoutSeconds" json:"timeoutSeconds,omitempty"`
	PeriodSeconds       int32 `yaml:"periodSeconds" json:"periodSeconds,omitempty"`
	SuccessThreshold    int32 `yaml:"successThreshold" json:"successThreshold,omitempty"`
	FailureThreshold    int32 `yaml:"failureThreshold" json:"failureThreshold,omitempty"`
	// TerminationGracePeriodSeconds, on a liveness or startup probe,
	// replaces the pod's grace period when that probe's failure kills the
	// container.
	TerminationGracePeriodSeconds *int64 `yaml:"terminationGracePeriodSeconds" json:"terminationGracePeriodSeconds,omitempty"`
}

// Handler returns the probe's action.
func (p *Probe) Handler() ProbeHandler {
	return ProbeHandler{Exec: p.Exec, HTTPGet: p.HTTPGet, TCPSocket: p.TCPSocket, GRPC: p.GRPC}
}

// ProbeHandler is one action of a probe or a lifecycle hook: exactly one
// field is set. (Kubernetes inlines it in Probe and LifecycleHandler; tug's
// decoder reads those fields there, and Handler gathers them.)
type ProbeHandler struct {
	Exec      *ExecAction
	HTTPGet   *HTTPGetAction
	TCPSocket *TCPSocketAction
	GRPC      *GRPCAction
}

// Kind names the handler's action: "exec", "httpGet", "tcpSocket", "grpc",
// or "" when none is set.
func (h ProbeHandler) Kind() string {
	switch {
	case h.Exec != nil:
		return "exec"
	case h.HTTPGet != nil:
		return "httpGet"
	case h.TCPSocket != nil:
		return "tcpSocket"
	case h.GRPC != nil:
		return "grpc"
	}
	return ""
}

// ExecAction runs a command in the container (no shell: wrap it in
// ["sh", "-c", ...] for one). Exit status 0 is success.
type ExecAction struct {
	Command []string `yaml:"command" json:"command,omitempty"`
}

// URIScheme is the scheme of an HTTP probe.
type URIScheme string

const (
	URISchemeHTTP  URIScheme = "HTTP"
	URISchemeHTTPS URIScheme = "HTTPS" // the certificate is not verified, as by the kubelet
)

// HTTPGetAction is a GET request; a status in [200, 400) is success. Host
// empty means the pod's IP. After SetDefaults, Path defaults to "/" and Scheme to
// HTTP.
type HTTPGetAction struct {
	Path        string       `yaml:"path" json:"path,omitempty"`
	Port        IntOrString  `yaml:"port" json:"port"`
	Host        string       `yaml:"host" json:"host,omitempty"`
	Scheme      URIScheme    `yaml:"scheme" json:"scheme,omitempty"`
	HTTPHeaders []HTTPHeader `yaml:"httpHeaders" json:"httpHeaders,omitempty"`
}

// HTTPHeader is a header of an HTTP probe ("Host" sets the request's host).
type HTTPHeader struct {
	Name  string `yaml:"name" json:"name"`
	Value string `yaml:"value" json:"value"`
}

// TCPSocketAction opens a TCP connection; success is the connection
// established. Host empty means the pod's IP.
type TCPSocketAction struct {
	Port IntOrString `yaml:"port" json:"port"`
	Host string      `yaml:"host" json:"host,omitempty"`
}

// GRPCAction calls grpc.health.v1.Health/Check on Port of the pod's IP,
// with Service ("" when unset); SERVING is success.
type GRPCAction struct {
	Port    int32   `yaml:"port" json:"port"`
	Service *string `yaml:"service" json:"service,omitempty"`
}

// SleepAction pauses a lifecycle hook for Seconds.
type SleepAction struct {
	Seconds int64 `yaml:"seconds" json:"seconds"`
}

// Lifecycle holds a container's hooks: PostStart runs right after the
// container starts, PreStop before it is sent its stop signal.
type Lifecycle struct {
	PostStart *LifecycleHandler `yaml:"postStart" json:"postStart,omitempty"`
	PreStop   *LifecycleHandler `yaml:"preStop" json:"preStop,omitempty"`
	// StopSignal is the signal that stops the container, in place of the
	// image's STOPSIGNAL and of SIGTERM. Kubernetes allows it only in a pod
	// whose spec.os.name is set.
	StopSignal *Signal `yaml:"stopSignal" json:"stopSignal,omitempty"`
}

// LifecycleHandler is the action of a hook: exactly one of Exec, HTTPGet,
// TCPSocket (accepted by the API; the kubelet does not run it) or Sleep.
type LifecycleHandler struct {
	Exec      *ExecAction      `yaml:"exec" json:"exec,omitempty"`
	HTTPGet   *HTTPGetAction   `yaml:"httpGet" json:"httpGet,omitempty"`
	TCPSocket *TCPSocketAction `yaml:"tcpSocket" json:"tcpSocket,omitempty"`
	Sleep     *SleepAction     `yaml:"sleep" json:"sleep,omitempty"`
}

// Handler returns the hook's network or exec action (Sleep is not one).
func (h *LifecycleHandler) Handler() ProbeHandler {
	return ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}
}

// IntOrString is a port given by number or by name (a name of one of the
// container's ports).
type IntOrString struct {
	IntVal   int32
	StrVal   string
	IsString bool
}

// FromInt returns an IntOrString holding a number.
func FromInt(i int32) IntOrString { return IntOrString{IntVal: i} }

// FromString returns an IntOrString holding a name.
func FromString(s string) IntOrString { return IntOrString{StrVal: s, IsString: true} }

// String returns the number or the name.
func (v IntOrString) String() string {
	if v.IsString {
		return v.StrVal
	}
	return strconv.Itoa(int(v.IntVal))
}

// MarshalJSON writes the number or the name, as Kubernetes does.
func (v IntOrString) MarshalJSON() ([]byte, error) {
	if v.IsString {
		return json.Marshal(v.StrVal)
	}
	return json.Marshal(v.IntVal)
}

// UnmarshalJSON reads a number or a name.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.IsString, v.IntVal = true, 0
		return json.Unmarshal(b, &v.StrVal)
	}
	v.IsString, v.StrVal = false, ""
	return json.Unmarshal(b, &v.IntVal)
}

// ResolvePort returns the port number of v for a container with ports: the
// number itself, or the containerPort of the port named v. It returns false
// for a name no port has.
func ResolvePort(v IntOrString, ports []ContainerPort) (int32, bool) {
	if !v.IsString {
		return v.IntVal, true
	}
	for _, p := range ports {
		if p.Name == v.StrVal {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// Signal names a stop signal as Kubernetes writes it: "SIGTERM",
// "SIGRTMIN+3", "SIGRTMAX-2".
type Signal string

// IsLinuxStopSignal reports whether s is one of the stop signals Kubernetes
// allows for a linux pod: every standard signal, SIGRTMIN to SIGRTMIN+15
// and SIGRTMAX-14 to SIGRTMAX.
func IsLinuxStopSignal(s Signal) bool {
	switch s {
	case "SIGABRT", "SIGALRM", "SIGBUS", "SIGCHLD", "SIGCLD", "SIGCONT", "SIGFPE", "SIGHUP",
		"SIGILL", "SIGINT", "SIGIO", "SIGIOT", "SIGKILL", "SIGPIPE", "SIGPOLL", "SIGPROF",
		"SIGPWR", "SIGQUIT", "SIGSEGV", "SIGSTKFLT", "SIGSTOP", "SIGSYS", "SIGTERM", "SIGTRAP",
		"SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGUSR1", "SIGUSR2", "SIGVTALRM", "SIGWINCH",
		"SIGXCPU", "SIGXFSZ", "SIGRTMIN", "SIGRTMAX":
		return true
	}
	for _, prefix := range []string{"SIGRTMIN+", "SIGRTMAX-"} {
		if n, ok := strings.CutPrefix(string(s), prefix); ok {
			i, err := strconv.Atoi(n)
			return err == nil && strconv.Itoa(i) == n && 1 <= i && (i <= 15 && prefix == "SIGRTMIN+" || i <= 14 && prefix == "SIGRTMAX-")
		}
	}
	return false
}
