package prober

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"tug/internal/pod"
)

// Result is the outcome of one probe.
type Result int

const (
	// Unknown: the probe could not be run (a Target without what it
	// needs, an error of tug's); it counts neither way.
	Unknown Result = iota
	Success
	Failure
)

// String returns the result as the kubelet's metrics label it.
func (r Result) String() string {
	switch r {
	case Success:
		return "successful"
	case Failure:
		return "failed"
	}
	return "unknown"
}

// Execer runs a command in one container and returns its exit code and its
// combined output. It must kill the command when ctx ends and return
// ctx.Err() (wrapped) then.
type Execer interface {
	Exec(ctx context.Context, cmd []string) (exitCode int, output []byte, err error)
}

// Target is where a handler acts: the container's pod.
type Target struct {
	// NetNS is the path of the pod's network namespace; "" is the
	// node's (a hostNetwork pod).
	NetNS string
	// PodIP is the address used when an action names no host.
	PodIP string
	// Ports are the container's ports, to resolve a port given by name.
	Ports []pod.ContainerPort
	// Exec runs exec actions in the container.
	Exec Execer
	// Dial, when set, dials from NetNS (the Manager's pool of namespace
	// threads); nil: DialContext, a new thread per dial.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// dial connects from the target's namespace.
func (t Target) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if t.Dial != nil {
		return t.Dial(ctx, network, addr)
	}
	return DialContext(ctx, t.NetNS, network, addr)
}

// maxBody is how much of an HTTP response or exec output is kept for the
// message (the kubelet keeps 10 KiB).
const maxBody = 10 << 10

// userAgent is the User-Agent of HTTP probes, unless a header sets one.
const userAgent = "tug-probe/1"

// Run runs handler h once against t with timeout, and returns the result
// and a message saying why (empty on plain success). An error comes with
// Unknown: tug could not run the probe.
func Run(ctx context.Context, h pod.ProbeHandler, t Target, timeout time.Duration) (Result, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		return runExec(ctx, h.Exec, t, timeout)
	case h.HTTPGet != nil:
		return runHTTP(ctx, h.HTTPGet, t, timeout)
	case h.TCPSocket != nil:
		return runTCP(ctx, h.TCPSocket, t)
	case h.GRPC != nil:
		return runGRPC(ctx, h.GRPC, t)
	}
	return Unknown, "", ErrNoHandler
}

func runExec(ctx context.Context, a *pod.ExecAction, t Target, timeout time.Duration) (Result, string, error) {
	if t.Exec == nil {
		return Unknown, "", ErrNoExecer
	}
	code, out, err := t.Exec.Exec(ctx, a.Command)
	if len(out) > maxBody {
		out = out[:maxBody]
	}
	msg := strings.TrimSpace(string(out))
	switch {
	case ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded):
		return Failure, fmt.Sprintf("command %q timed out after %s", a.Command, timeout), nil
	case err != nil:
		return Unknown, "", fmt.Errorf("exec %q: %w", a.Command, err)
	case code != 0:
		if msg == "" {
			msg = fmt.Sprintf("command %q exited with %d", a.Command, code)
		}
		return Failure, msg, nil
	}
	return Success, msg, nil
}

// address returns host:port for an action with host and port.
func address(host string, port pod.IntOrString, t Target) (string, error) {
	n, ok := pod.ResolvePort(port, t.Ports)
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrPortNotFound, port.StrVal)
	}
	if host == "" {
		host = t.PodIP
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(int(n))), nil
}

func runTCP(ctx context.Context, a *pod.TCPSocketAction, t Target) (Result, string, error) {
	addr, err := address(a.Host, a.Port, t)
	if err != nil {
		return Unknown, "", err
	}
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return Failure, "dial tcp " + addr + ": " + cause(err), nil
	}
	_ = conn.Close()
	return Success, "", nil
}

func runHTTP(ctx context.Context, a *pod.HTTPGetAction, t Target, timeout time.Duration) (Result, string, error) {
	addr, err := address(a.Host, a.Port, t)
	if err != nil {
		return Unknown, "", err
	}
	scheme := "http"
	if a.Scheme == pod.URISchemeHTTPS {
		scheme = "https"
	}
	path := a.Path
	if path == "" {
		path = "/"
	}
	u, err := url.Parse(scheme + "://" + addr + path)
	if err != nil {
		return Unknown, "", fmt.Errorf("probe URL: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Unknown, "", fmt.Errorf("probe request: %w", err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range a.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	tr := &http.Transport{
		DialContext:           t.dial,
		TLSClientConfig:       &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet does not verify probe certificates
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: timeout,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		// Redirects are followed on the same host, as by the kubelet; a
		// redirect elsewhere is a success (with its status) not followed.
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if len(via) >= 10 || r.URL.Host != via[0].URL.Host {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return Failure, cause(err), nil // a *url.Error: "Get \"url\": ..."
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest {
		return Success, "", nil
	}
	msg := fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	if b := bytes.TrimSpace(body); len(b) > 0 && len(b) < 256 {
		msg += ": " + string(b)
	}
	return Failure, msg, nil
}

func runGRPC(ctx context.Context, a *pod.GRPCAction, t Target) (Result, string, error) {
	addr, err := address("", pod.FromInt(a.Port), t)
	if err != nil {
		return Unknown, "", err
	}
	conn, err := grpc.DialContext(ctx, "passthrough:///"+addr, //nolint:staticcheck // grpc 1.59 (containerd's) has no NewClient
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return t.dial(ctx, "tcp", addr)
		}),
		grpc.WithUserAgent(userAgent))
	if err != nil {
		return Unknown, "", fmt.Errorf("grpc client: %w", err)
	}
	defer conn.Close()
	service := ""
	if a.Service != nil {
		service = *a.Service
	}
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		st, _ := status.FromError(err)
		switch st.Code() {
		case codes.Unimplemented:
			return Failure, "this server does not implement the grpc health protocol (grpc.health.v1.Health): " + st.Message(), nil
		case codes.DeadlineExceeded:
			return Failure, "timeout: health rpc did not complete within the probe's timeout", nil
		}
		return Failure, "failed to connect service " + strconv.Quote(addr) + ": " + st.Message(), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, "service unhealthy (responded with " + strconv.Quote(resp.GetStatus().String()) + ")", nil
	}
	return Success, "", nil
}

// cause shortens a dial or request error to its last part ("connection
// refused", "context deadline exceeded").
func cause(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		var u *url.Error
		if errors.As(err, &u) {
			return u.Op + " " + strconv.Quote(u.URL) + ": timeout"
		}
		return "timeout"
	}
	return err.Error()
}
