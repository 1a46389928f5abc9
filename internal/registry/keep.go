package registry

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// DefaultIdleConnTimeout is how long a registry host's idle connection is
// kept open, the default of Config.IdleConnTimeout: longer than the OCI
// source's default period (1 minute), so that each poll reuses the
// connection of the last one instead of paying a TCP and TLS handshake.
const DefaultIdleConnTimeout = 5 * time.Minute

// kept holds one set of HTTP transports per registry host, reused by every
// resolver the Registry gives (each OCI poll, each image pull), so that
// their requests share connections. A host's set is built again when the
// files of its hosts directory change (hosts.toml, certificates, keys):
// its stamp is their names, sizes, modification times and contents.
type kept struct {
	idle time.Duration

	mu     sync.Mutex
	byHost map[string]*hostTransports
}

// hostTransports is one registry host's transports, in the order
// containerd's ConfigureHosts asks for them (the shared client first,
// then each host of hosts.toml with a TLS or dial setting of its own):
// for one stamp, that order is the same at every call.
type hostTransports struct {
	stamp string
	idle  time.Duration

	mu  sync.Mutex
	trs []*http.Transport
}

// forHost returns host's transports for stamp: the kept ones when the
// stamp is the same, else a new empty set, the old set's idle connections
// closed.
func (k *kept) forHost(host, stamp string) *hostTransports {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byHost == nil {
		k.byHost = make(map[string]*hostTransports)
	}
	if h, ok := k.byHost[host]; ok {
		if h.stamp == stamp {
			return h
		}
		h.closeIdle()
	}
	h := &hostTransports{stamp: stamp, idle: k.idle}
	k.byHost[host] = h
	return h
}

// transport returns the i-th transport of the set: the kept one, or fresh
// (ConfigureHosts' own, built from the same files) made the set's,
// tuned to keep its connections: idle ones open for the idle timeout,
// HTTP/2 when the server offers it over TLS (Go leaves HTTP/2 off for a
// transport with its own TLS configuration or dialer, as containerd's),
// and TLS sessions resumed when a connection is made again (no
// certificate chain sent again).
func (h *hostTransports) transport(i int, fresh *http.Transport) *http.Transport {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i < len(h.trs) {
		return h.trs[i]
	}
	fresh.IdleConnTimeout = h.idle
	fresh.ForceAttemptHTTP2 = true
	if fresh.TLSClientConfig != nil && fresh.TLSClientConfig.ClientSessionCache == nil {
		fresh.TLSClientConfig.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	}
	h.trs = append(h.trs, fresh)
	return fresh
}

func (h *hostTransports) closeIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, tr := range h.trs {
		tr.CloseIdleConnections()
	}
}

// stamp says what the hosts directory of host holds: its path and, for each
// regular file in it, name, size, modification time and a hash of its
// content. "" when there is no directory (containerd's defaults). A file
// that hosts.toml names outside the directory (a CA elsewhere) is not part
// of the stamp: its change is taken at the next change of the directory.
func (r *Registry) stamp(host string) (string, error) {
	dir, err := r.hostDir(host)
	if err != nil || dir == "" {
		return "", nil // no directory (or a host refused, which ConfigureHosts refuses too)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("registry hosts of %q: %w", host, err)
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\x00", dir)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	for _, name := range names {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("registry hosts of %q: %w", host, err)
		}
		c := sha256.Sum256(data)
		fmt.Fprintf(sum, "%s\x00%d\x00%d\x00%x\x00", name, fi.Size(), fi.ModTime().UnixNano(), c)
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}
