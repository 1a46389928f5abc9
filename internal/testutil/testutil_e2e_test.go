//go:build e2e

package testutil

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestEnvironment checks the helpers against the real test environment
// (scripts/testenv.sh up): with it they must neither skip nor fail.
func TestEnvironment(t *testing.T) {
	addr := RequireContainerd(t)
	if addr != os.Getenv(EnvContainerd) {
		t.Errorf("RequireContainerd = %q", addr)
	}
	name, archive := TestImage(t)
	if name == "" || archive == "" {
		t.Errorf("TestImage = %q, %q", name, archive)
	}
	if ref := RegistryImage(t); ref == "" {
		t.Error("RegistryImage is empty")
	}
	RequireCommand(t, "ctr")
	Logger(t).Info("environment ok", "containerd", addr, "image", name, "namespace", Namespace(t))
}

// TestNamespaceLeakCheck: the leak check passes silently on a namespace
// the test emptied, and on one where something is left (a lease, an
// image; a running container with its task, snapshot and shim) it reports
// each object, removes it and deletes the namespace.
func TestNamespaceLeakCheck(t *testing.T) {
	addr := RequireContainerd(t)
	client, err := containerd.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	tests := []struct {
		name  string
		leave func(ctx context.Context) error
		want  []string // in the report; none: no report
	}{
		{name: "empty", leave: func(context.Context) error { return nil }},
		{
			name: "lease and image",
			leave: func(ctx context.Context) error {
				if _, err := client.LeasesService().Create(ctx, leases.WithID("left-behind")); err != nil {
					return err
				}
				_, err := client.ImageService().Create(ctx, images.Image{
					Name:   "example.com/left:1",
					Target: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("x"), Size: 1},
				})
				return err
			},
			want: []string{"lease left-behind", "image example.com/left:1"},
		},
	}
	name, archive := TestImage(t)
	tests = append(tests, struct {
		name  string
		leave func(ctx context.Context) error
		want  []string
	}{
		name: "running task",
		leave: func(ctx context.Context) error {
			f, err := os.Open(archive)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := client.Import(ctx, f); err != nil {
				return err
			}
			img, err := client.GetImage(ctx, name)
			if err != nil {
				return err
			}
			if err := img.Unpack(ctx, ""); err != nil {
				return err
			}
			c, err := client.NewContainer(ctx, "left", containerd.WithNewSnapshot("left", img),
				containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "60")))
			if err != nil {
				return err
			}
			task, err := c.NewTask(ctx, cio.NullIO)
			if err != nil {
				return err
			}
			return task.Start(ctx)
		},
		want: []string{"task left (RUNNING)", "container left", "snapshot overlayfs/left", "image " + name, "shim "},
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := namespaceFor(t.Name(), strconv.FormatInt(time.Now().UnixNano()%1e9, 36))
			ctx := namespaces.WithNamespace(context.Background(), ns)
			if err := client.NamespaceService().Create(ctx, ns, nil); err != nil {
				t.Fatal(err)
			}
			// Should the test end early: nothing of it stays.
			defer checkNamespace(&recorder{TB: t}, addr, ns)
			if err := tt.leave(ctx); err != nil {
				t.Fatal(err)
			}
			r := &recorder{TB: t}
			checkNamespace(r, addr, ns)
			report := strings.Join(r.errs, "\n")
			if len(tt.want) == 0 && report != "" {
				t.Errorf("leak check on an empty namespace reported:\n%s", report)
			}
			if len(tt.want) > 0 && len(r.errs) != 1 {
				t.Errorf("leak check reported %d errors, want the leak only:\n%s", len(r.errs), report)
			}
			for _, w := range tt.want {
				if !strings.Contains(report, w) {
					t.Errorf("report does not name %q:\n%s", w, report)
				}
			}
			nss, err := client.NamespaceService().List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(nss, ns) {
				t.Errorf("namespace %s still exists", ns)
			}
		})
	}
}
