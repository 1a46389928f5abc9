//go:build e2e

package e2e

import (
	"context"
	"os"
	"testing"

	"tug/internal/testutil"
)

func TestPullFromRegistry(t *testing.T) {
	t.Parallel()
	ref := testutil.RegistryImage(t)
	registry := os.Getenv(testutil.EnvRegistry)
	tg := startTug(t, tugOpts{noImageArchive: true, beforeStart: func(tg *tug) { tg.relay(registry) }})
	tg.writeManifest("pull.yaml", shPod("pull", ref, idle, "      imagePullPolicy: Always\n"))
	c := tg.waitRunning(startTimeout, "pull", "main", 0)

	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	if _, err := tg.client.ImageService().Get(ctx, ref); err != nil {
		t.Errorf("image %s is not in namespace %s: %v", ref, tg.ns, err)
	}
	if _, err := tg.client.ImageService().Get(ctx, tg.image); !isNotFound(err) {
		t.Errorf("image %s is in namespace %s (%v): the pull test imported an archive", tg.image, tg.ns, err)
	}
	ctrd, err := tg.client.LoadContainer(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := ctrd.Info(ctx); err != nil || info.Image != ref {
		t.Errorf("container %s has image %q (%v), want %s", c.ID, info.Image, err, ref)
	}
}

func TestImportFromImageDir(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{noImageArchive: true})
	tg.writeManifest("side.yaml", shPod("side", tg.image, "echo sideloaded; "+idle, "      imagePullPolicy: Never\n"))
	tg.waitForOutput(startTimeout, staticName("side"), "image not present")
	if cs, err := tg.podContainers(tg.uid("side")); err != nil || len(cs) > 0 {
		t.Fatalf("containers of a pod whose image is missing: %v, %v", cs, err)
	}

	tg.copyImageArchive()
	tg.waitRunning(startTimeout, "side", "main", 0)
	tg.waitLog(logTimeout, "side", "main", 0, "sideloaded")
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	if _, err := tg.client.ImageService().Get(ctx, tg.image); err != nil {
		t.Errorf("image %s is not in namespace %s: %v", tg.image, tg.ns, err)
	}
}
