package images

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/core/remotes"

	"tug/internal/pod"
	"tug/internal/registry"
)

// Registry credentials, as the kubelet finds them: first the pod's
// imagePullSecrets (Secrets of type kubernetes.io/dockerconfigjson bound
// to the pod, in the order the pod names them), then the node's
// <root-dir>/config.json (docker's format), read at each pull so that a
// change applies without a restart. Credentials are never logged.

// credential is one registry's user name and password.
type credential struct{ user, pass string }

// keyring is an ordered list of docker configs; the first that has the
// registry wins.
type keyring []map[string]credential

// dockerConfig is the part of docker's config.json tug reads.
type dockerConfig struct {
	Auths map[string]struct {
		Auth     string `json:"auth"`
		Username string `json:"username"`
		Password string `json:"password"`
	} `json:"auths"`
}

// parseDockerConfig reads a config.json (or a .dockerconfigjson) into
// credentials by registry host. Its errors never quote the content.
func parseDockerConfig(data []byte) (map[string]credential, error) {
	var dc dockerConfig
	if err := json.Unmarshal(data, &dc); err != nil {
		return nil, errors.New("not a docker config.json: invalid JSON")
	}
	out := map[string]credential{}
	for key, a := range dc.Auths {
		c := credential{user: a.Username, pass: a.Password}
		if a.Auth != "" {
			dec, err := base64.StdEncoding.DecodeString(a.Auth)
			if err != nil {
				return nil, fmt.Errorf("auths[%q].auth: invalid base64", key)
			}
			u, p, ok := strings.Cut(string(dec), ":")
			if !ok {
				return nil, fmt.Errorf("auths[%q].auth: not user:password", key)
			}
			c = credential{user: u, pass: p}
		}
		out[registryHost(key)] = c
	}
	return out, nil
}

// registryHost turns a config.json key ("https://index.docker.io/v1/",
// "registry.example:5000", "http://127.0.0.1:5000/") into the host the
// resolver asks about.
func registryHost(key string) string {
	if strings.Contains(key, "://") {
		if u, err := url.Parse(key); err == nil {
			key = u.Host
		}
	}
	key, _, _ = strings.Cut(key, "/")
	switch key {
	case "index.docker.io", "docker.io", "registry-1.docker.io":
		return "registry-1.docker.io"
	}
	return key
}

// creds is the resolver's credentials callback.
func (k keyring) creds(host string) (string, string, error) {
	host = registryHost(host)
	for _, m := range k {
		if c, ok := m[host]; ok {
			return c.user, c.pass, nil
		}
	}
	return "", "", nil
}

// fingerprint tells keyrings apart (for sharing a pull), without showing
// what they hold.
func (k keyring) fingerprint() string {
	if len(k) == 0 {
		return ""
	}
	h := sha256.New()
	for _, m := range k {
		for _, host := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(h, "%s\x00%s\x00%s\x00", host, m[host].user, m[host].pass)
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// keyringFor returns the credentials for pulling p's images. A pull secret
// that is missing or not of type dockerconfigjson is skipped with a
// warning, as the kubelet does (the pull may not need it).
func (m *Manager) keyringFor(p *pod.Pod) keyring {
	var k keyring
	if p != nil {
		for _, ref := range p.Spec.ImagePullSecrets {
			o := p.Object(pod.KindSecret, ref.Name)
			switch {
			case o == nil:
				m.log.Warn("image pull secret not found; pulling without it", "pod", p.FullName(), "uid", p.Metadata.UID, "file", ref.Name)
				continue
			case o.Type != pod.SecretDockerConfigJSON:
				m.log.Warn("image pull secret is not of type "+pod.SecretDockerConfigJSON+"; skipped", "pod", p.FullName(), "uid", p.Metadata.UID, "file", ref.Name)
				continue
			}
			creds, err := parseDockerConfig(o.Data[".dockerconfigjson"])
			if err != nil {
				m.log.Warn("image pull secret unreadable; skipped", "pod", p.FullName(), "uid", p.Metadata.UID, "file", ref.Name, "err", err)
				continue
			}
			k = append(k, creds)
		}
	}
	path := filepath.Join(m.cfg.RootDir, "config.json")
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		m.log.Warn("read node registry credentials", "file", path, "err", err)
	default:
		creds, err := parseDockerConfig(data)
		if err != nil {
			m.log.Warn("node registry credentials unreadable; pulling without them", "file", path, "err", err)
			break
		}
		k = append(k, creds)
	}
	return k
}

// resolverFor returns a resolver of the Manager's registry hosts that
// answers the registries' basic or token auth with k (anonymously when k
// is empty) and records in from which hosts answered.
func (m *Manager) resolverFor(ctx context.Context, k keyring, from *servedBy) remotes.Resolver {
	var creds registry.Credentials
	if len(k) > 0 {
		creds = k.creds
	}
	return m.registry.Resolver(ctx, creds, from.observe)
}
