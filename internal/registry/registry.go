// Package registry says how tug reaches image registries: the hosts of a
// registry read from containerd's certs.d layout (hosts.toml: mirrors
// tried in order before the upstream, per-host CAs, client certificates,
// skip_verify, capabilities, override_path), parsed by containerd's own
// core/remotes/docker/config so that a file means for tug what it means
// for containerd; one token bucket that caps the download rate of every
// resolver it gives (the node's total); and, per resolver, which host
// answered (a mirror or the upstream). Every resolver of a Registry
// shares one set of HTTP transports per registry host, kept until the
// host's directory changes, so that polls and pulls reuse connections
// (keep-alive, and HTTP/2 where the server offers it).
//
// Its Resolver serves every user of a registry (image pulls, the OCI
// bundle source). It imports containerd's remotes only, and no tug
// package: the caller gives the credentials.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/containerd/errdefs"
)

// DefaultHostsDir is containerd's default certs.d root, the default of
// Config.HostsDir.
const DefaultHostsDir = "/etc/containerd/certs.d"

// ErrInvalidHost means a registry host name (it comes from an image
// reference, so from a manifest) is not a host name, an IP address or a
// bracketed IPv6 address, with an optional port: it is refused before it
// becomes a path below Config.HostsDir.
var ErrInvalidHost = errors.New("registry: invalid registry host")

// Config configures a Registry.
type Config struct {
	// HostsDir is the root of containerd's certs.d layout: the hosts of
	// registry HOST[:PORT] are read from HostsDir/HOST_PORT_/hosts.toml,
	// HostsDir/HOST[:PORT]/hosts.toml or HostsDir/_default/hosts.toml
	// (the first directory found), or from the docker-style *.crt, *.cert
	// and *.key files of that directory. A missing directory, or "", means
	// containerd's defaults for every registry.
	HostsDir string
	// Bandwidth caps, in bytes per second, what every resolver of the
	// Registry downloads, all together (0: no cap).
	Bandwidth int64
	// IdleConnTimeout is how long an idle connection to a registry host
	// is kept for the next request. Default DefaultIdleConnTimeout.
	IdleConnTimeout time.Duration
}

// Registry gives resolvers that read the hosts of Config.HostsDir and
// share one download cap. Safe for concurrent use.
type Registry struct {
	hostsDir string
	bucket   *bucket // nil: no cap
	kept     *kept
}

// New returns a Registry of cfg.
func New(cfg Config) *Registry {
	if cfg.IdleConnTimeout <= 0 {
		cfg.IdleConnTimeout = DefaultIdleConnTimeout
	}
	r := &Registry{hostsDir: cfg.HostsDir, kept: &kept{idle: cfg.IdleConnTimeout}}
	if cfg.Bandwidth > 0 {
		r.bucket = newBucket(cfg.Bandwidth, systemClock{})
	}
	return r
}

// Credentials answers a registry's basic or token auth for host (the host
// that asks, a mirror's or the upstream's): a user name and a password or
// token, both "" for none.
type Credentials func(host string) (user, secret string, err error)

// Served is one answer of a registry host to a resolver: a response of
// status 2xx to a GET or HEAD (a manifest, a blob).
type Served struct {
	// Host is the host that answered, as configured (a redirect to a
	// storage backend is still its answer).
	Host string
	// Mirror is true when Host is a mirror of the reference's registry
	// (a [host] of its hosts.toml other than the upstream), false when it
	// is the upstream (the registry itself, or the file's server).
	Mirror bool
}

// Observer is told of each answer of a resolver's hosts; it is called
// from the resolver's HTTP transport, concurrently, and must not block.
type Observer func(Served)

// Resolver returns a resolver of image references through r's hosts.
// creds (nil: anonymous) answers the registries' auth; observe (nil:
// none) is told which host answered each request. ctx carries the logger
// of containerd's own messages about the hosts' directories; it does not
// bound the resolver.
func (r *Registry) Resolver(ctx context.Context, creds Credentials, observe Observer) remotes.Resolver {
	return docker.NewResolver(docker.ResolverOptions{Hosts: r.Hosts(ctx, creds, observe)})
}

// Hosts returns the hosts of a registry, mirrors first, as containerd's
// ConfigureHosts reads them from r's HostsDir, with r's cap on each
// host's responses and observe told of each answer; see Resolver.
func (r *Registry) Hosts(ctx context.Context, creds Credentials, observe Observer) docker.RegistryHosts {
	return func(host string) ([]docker.RegistryHost, error) {
		stamp, err := r.stamp(host)
		if err != nil {
			return nil, err
		}
		set := r.kept.forHost(host, stamp)
		next := 0
		configure := config.ConfigureHosts(ctx, config.HostOptions{
			HostDir:     r.hostDir,
			Credentials: creds,
			// Each client ConfigureHosts builds (the one the hosts share,
			// then one per host with TLS or dial settings of its own,
			// the authorizers' too) gets the kept transport of its place.
			UpdateClient: func(c *http.Client) error {
				if tr, ok := c.Transport.(*http.Transport); ok {
					c.Transport = set.transport(next, tr)
				}
				next++
				return nil
			},
		})
		hosts, err := configure(host) // hostDir refuses a host that is no host name
		if err != nil {
			return nil, fmt.Errorf("registry hosts of %q: %w", host, err)
		}
		if len(hosts) == 0 {
			return hosts, nil
		}
		upstream := hosts[len(hosts)-1].Host // the server, or the registry itself
		for i := range hosts {
			h := &hosts[i]
			c := *h.Client // hosts may share one; each gets its own transport
			c.Transport = &transport{
				base:    transportOf(h.Client),
				bucket:  r.bucket,
				served:  Served{Host: h.Host, Mirror: i < len(hosts)-1 && h.Host != upstream},
				observe: observe,
			}
			h.Client = &c
		}
		return hosts, nil
	}
}

// hostDir is containerd's HostDirFromRoot for a host that ValidHost
// accepts: HostDirFromRoot joins the host to the root as it is, so "..",
// or "../etc" in a reference, would read another directory's files.
func (r *Registry) hostDir(host string) (string, error) {
	if !ValidHost(host) {
		return "", fmt.Errorf("%w: %q", ErrInvalidHost, host)
	}
	if r.hostsDir == "" {
		return "", errdefs.ErrNotFound
	}
	return config.HostDirFromRoot(r.hostsDir)(host)
}

// hostPattern is the registry host of distribution's reference grammar
// (DNS labels of letters, digits and inner hyphens, or a bracketed IPv6
// address), with an optional port.
var hostPattern = regexp.MustCompile(`^(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$`)

// ValidHost reports whether host is a registry host, HOST[:PORT], that is
// safe as a path element below the hosts directory.
func ValidHost(host string) bool {
	return len(host) <= 255 && hostPattern.MatchString(host)
}

// transportOf returns c's transport, or the default one when it has none.
func transportOf(c *http.Client) http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}
