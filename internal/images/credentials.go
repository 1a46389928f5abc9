package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/containerd/containerd/v2/core/remotes"

	"tug/internal/pod"
	"tug/internal/registry"
)

// Registry credentials, as the kubelet finds them: first the pod's
// imagePullSecrets (Secrets of type kubernetes.io/dockerconfigjson bound
// to the pod, in the order the pod names them), then the node's
// <root-dir>/config.json (docker's format), read at each pull so that a
// change applies without a restart. Credentials are never logged.

// keyring is an ordered list of docker configs; the first that has the
// registry wins.
type keyring []registry.Auths

// creds is the resolver's credentials callback.
func (k keyring) creds(host string) (string, string, error) {
	for _, m := range k {
		if c, ok := m.Lookup(host); ok {
			return c.User, c.Secret, nil
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
			fmt.Fprintf(h, "%s\x00%s\x00%s\x00", host, m[host].User, m[host].Secret)
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
			creds, err := registry.ParseDockerConfig(o.Data[".dockerconfigjson"])
			if err != nil {
				m.log.Warn("image pull secret unreadable; skipped", "pod", p.FullName(), "uid", p.Metadata.UID, "file", ref.Name, "err", err)
				continue
			}
			k = append(k, creds)
		}
	}
	path := filepath.Join(m.cfg.RootDir, "config.json")
	switch creds, err := registry.ReadDockerConfig(path); {
	case err != nil:
		m.log.Warn("node registry credentials unreadable; pulling without them", "file", path, "err", err)
	case creds != nil:
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
