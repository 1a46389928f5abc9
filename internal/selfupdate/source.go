package selfupdate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tug/internal/bundle"
)

// ociRelease is a release in a registry (--self-update-oci).
type ociRelease struct {
	ref      string
	resolver bundle.ArtifactResolver
	arch     string
	desc     ocispec.Descriptor
}

// NewOCISource returns the source of a release in a registry
// (--self-update-oci): ref resolved with one HEAD per poll, arch's
// manifest of its index fetched when the digest changed.
func NewOCISource(ref string, r bundle.ArtifactResolver, arch string) Source {
	return &ociRelease{ref: ref, resolver: r, arch: arch}
}

// NewURLSource returns the source of a release at a URL
// (--self-update-url): this architecture's signed binary.
func NewURLSource(url string, client *http.Client) Source {
	return urlRelease{url: url, client: client}
}

func (o *ociRelease) Name() string { return o.ref }

func (o *ociRelease) Resolve(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	d, err := bundle.ResolveRelease(ctx, o.resolver, o.ref)
	if err != nil {
		return "", err
	}
	o.desc = d
	return d.Digest.String(), nil
}

func (o *ociRelease) Fetch(ctx context.Context, _ string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	a, err := bundle.FetchRelease(ctx, o.resolver, o.ref, o.desc, o.arch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.ref, err)
	}
	return a.Body, nil
}

// urlRelease is this architecture's signed binary at a URL
// (--self-update-url): a HEAD's ETag, Last-Modified and length tell an
// unchanged release.
type urlRelease struct {
	url    string
	client *http.Client
}

func (u urlRelease) Name() string { return u.url }

func (u urlRelease) Resolve(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u.url, nil)
	if err != nil {
		return "", err
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: HEAD: %s", u.url, resp.Status)
	}
	id := resp.Header.Get("ETag") + "|" + resp.Header.Get("Last-Modified") + "|" + fmt.Sprint(resp.ContentLength)
	if id == "||-1" {
		return "", nil
	}
	return id, nil
}

func (u urlRelease) Fetch(ctx context.Context, _ string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u.url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, bundle.MaxRelease+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u.url, err)
	}
	if len(data) > bundle.MaxRelease {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", u.url, bundle.ErrTooLarge, bundle.MaxRelease)
	}
	return data, nil
}
