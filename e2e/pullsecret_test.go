//go:build e2e

package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// Image pulls with credentials, from a Secret of type
// kubernetes.io/dockerconfigjson named in imagePullSecrets and from the
// node's <root-dir>/config.json, against Debian's docker-registry with
// htpasswd basic auth on loopback.

const (
	registryUser = "tug-e2e"
	registryPass = "tug-e2e-pass"
	// registryHash is bcrypt(registryPass), cost 4 (htpasswd -B).
	registryHash = "$2b$04$pUIfz3/OlvxDSzhDqw2lG.tIXwElBA2.vLPQVbyrtsJ83GKxWInou"
)

// authRegistry starts a second docker-registry on a free loopback port that
// serves the test registry's storage (read-only) behind htpasswd basic
// auth, and returns the image's reference through it and its address.
func authRegistry(t *testing.T) (ref, addr string) {
	t.Helper()
	open := testutil.RegistryImage(t)
	r := startRegistry(t, registryOpts{shared: true, auth: registryUser + ":" + registryHash + "\n"})
	_, path, _ := strings.Cut(open, "/")
	return r.Ref(path), r.Addr
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// dockerConfigJSON is a config.json giving the test user for addr.
func dockerConfigJSON(addr string) string {
	auth := base64.StdEncoding.EncodeToString([]byte(registryUser + ":" + registryPass))
	return `{"auths":{"` + addr + `":{"auth":"` + auth + `"}}}`
}

// pullPod is a pod of image ref, always pulled, with extra spec fields.
func pullPod(name, ref, specExtra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
%s  containers:
  - name: main
    image: %s
    imagePullPolicy: Always
    command: ["sh", "-c", %q]
`, name, specExtra, ref, idle)
}

// TestObjectsPullSecret: a pod naming a dockerconfigjson Secret of its
// bundle pulls from the registry with basic auth; the same image without
// the secret fails with ErrImagePull (the registry does ask).
func TestObjectsPullSecret(t *testing.T) {
	t.Parallel()
	ref, addr := authRegistry(t)
	tg := startTug(t, tugOpts{noImageArchive: true, beforeStart: func(tg *tug) { tg.relay(addr) }})
	secret := `apiVersion: v1
kind: Secret
metadata:
  name: regcred
type: kubernetes.io/dockerconfigjson
stringData:
  .dockerconfigjson: '` + dockerConfigJSON(addr) + `'
`
	tg.writeManifest("bundle.yaml", secret+"---\n"+pullPod("private", ref, "  imagePullSecrets:\n  - name: regcred\n")+"---\n"+pullPod("anon", ref, ""))
	tg.waitRunning(startTimeout, "private", "main", 0)
	tg.waitPod(startTimeout, "anon", "ErrImagePull without credentials", func(v *podview.View) error {
		for _, cs := range v.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && (w.Reason == pod.ReasonErrImagePull || w.Reason == pod.ReasonImagePullBackOff) {
				return nil
			}
		}
		return fmt.Errorf("no pull error")
	})
	if strings.Contains(tg.output(), registryPass) || strings.Contains(tg.output(), base64.StdEncoding.EncodeToString([]byte(registryUser+":"+registryPass))) {
		t.Fatal("the registry password is in tug's output")
	}
}

// TestObjectsNodeCredentials: the node's <root-dir>/config.json gives the
// credentials to a pod that names no pull secret.
func TestObjectsNodeCredentials(t *testing.T) {
	t.Parallel()
	ref, addr := authRegistry(t)
	tg := startTug(t, tugOpts{noImageArchive: true, beforeStart: func(tg *tug) {
		tg.relay(addr)
		must(t, os.WriteFile(filepath.Join(tg.rootDir, "config.json"), []byte(dockerConfigJSON(addr)), 0o600))
	}})
	tg.writeManifest("pod.yaml", pullPod("node", ref, ""))
	tg.waitRunning(startTimeout, "node", "main", 0)
}
