//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tug/internal/api"
	"tug/internal/events"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/testutil"
)

// ConfigMap, Secret and PersistentVolumeClaim objects
// beside pods, and the downward API, on the real containerd.

// objPod is a pod of one busybox container that sleeps, with extra
// container fields (env, volumeMounts, indented by 4) and spec fields
// (volumes, indented by 2).
func objPod(name, image, containerExtra, specExtra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels:
    app: demo
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", "sleep 3600"]
%s%s`, name, image, containerExtra, specExtra)
}

// inContainer reads a file as the running container sees it (through its
// root: the container's own mounts, symlinks resolved inside it).
func inContainer(c ctr, path string) (string, error) {
	b, err := os.ReadFile(filepath.Join(fmt.Sprintf("/proc/%d/root", c.PID), path))
	return string(b), err
}

// envOf returns the environment the container's process started with. It
// waits for runc's init to exec the container's command, and for the exec
// to finish: a task's start returns when the init is released, a moment
// before the exec, and until then /proc/PID/environ is runc's; during the
// exec the new name is set before the new environment, which reads empty
// for that moment. The container's environment always has PATH, so one
// without it is never taken for the container's (a check that something is
// absent cannot pass on it).
func (tg *tug) envOf(c ctr) map[string]string {
	tg.t.Helper()
	env := map[string]string{}
	tg.waitFor(10*time.Second, fmt.Sprintf("pid %d to exec the container's command", c.PID), func() (bool, error) {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c.PID))
		if err != nil {
			return false, err
		}
		if strings.HasPrefix(string(comm), "runc:") {
			return false, fmt.Errorf("still runc's init (%q)", strings.TrimSpace(string(comm)))
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", c.PID))
		if err != nil {
			return false, err
		}
		clear(env)
		for _, kv := range strings.Split(string(b), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		if env["PATH"] == "" {
			return false, fmt.Errorf("environment has no PATH yet: %q", b)
		}
		return true, nil
	})
	return env
}

// waitContent waits until path in container c reads want.
func (tg *tug) waitContent(c ctr, path, want string) {
	tg.t.Helper()
	tg.waitFor(15*time.Second, fmt.Sprintf("%s reads %q", path, want), func() (bool, error) {
		got, err := inContainer(c, path)
		if err != nil {
			return false, err
		}
		if got != want {
			return false, fmt.Errorf("reads %q", got)
		}
		return true, nil
	})
}

func configMap(name, data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n" + data
}

// TestObjectsConfigMapInPlace: a ConfigMap volume (all keys, and items
// with a mode) and a configMapKeyRef env; the ConfigMap changes and the
// running container sees the new files within seconds, through the same
// task (no restart), while its env keeps the value it started with.
func TestObjectsConfigMapInPlace(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	podYAML := objPod("cm", tg.image, `    env:
    - name: GREETING
      valueFrom:
        configMapKeyRef: {name: app-config, key: greeting}
    envFrom:
    - prefix: CFG_
      configMapRef: {name: app-config}
    volumeMounts:
    - {name: cfg, mountPath: /etc/app}
    - {name: one, mountPath: /etc/one}
`, `  volumes:
  - name: cfg
    configMap: {name: app-config}
  - name: one
    configMap:
      name: app-config
      items:
      - {key: greeting, path: sub/hello.txt, mode: 0640}
`)
	tg.writeManifest("cm.yaml", configMap("app-config", "  greeting: hello\n  color: blue\n")+"---\n"+podYAML)
	c := tg.waitRunning(30*time.Second, "cm", "main", 0)
	tg.waitContent(c, "/etc/app/greeting", "hello")
	tg.waitContent(c, "/etc/app/color", "blue")
	tg.waitContent(c, "/etc/one/sub/hello.txt", "hello")
	if fi, err := os.Stat(filepath.Join(fmt.Sprintf("/proc/%d/root", c.PID), "/etc/one/sub/hello.txt")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("items mode: %v, %v; want 0640", fi, err)
	}
	env := tg.envOf(c)
	if env["GREETING"] != "hello" || env["CFG_color"] != "blue" || env["CFG_greeting"] != "hello" {
		t.Fatalf("env: GREETING=%q CFG_color=%q CFG_greeting=%q", env["GREETING"], env["CFG_color"], env["CFG_greeting"])
	}

	start := time.Now()
	tg.writeManifest("cm.yaml", configMap("app-config", "  greeting: bye\n")+"---\n"+podYAML)
	tg.waitContent(c, "/etc/app/greeting", "bye")
	tg.waitContent(c, "/etc/one/sub/hello.txt", "bye")
	t.Logf("update seen in the container after %v", time.Since(start).Round(time.Millisecond))
	if _, err := inContainer(c, "/etc/app/color"); !os.IsNotExist(err) {
		t.Fatalf("removed key color still there: %v", err)
	}
	now := tg.waitRunning(5*time.Second, "cm", "main", 0)
	if now.ID != c.ID || now.PID != c.PID {
		t.Fatalf("container restarted: %s -> %s", c, now)
	}
	if env := tg.envOf(now); env["GREETING"] != "hello" {
		t.Fatalf("env changed in a running container: GREETING=%q", env["GREETING"])
	}
}

// TestObjectsSecret: a Secret (data and stringData) as a volume (tmpfs,
// 0600 files), a secretKeyRef env and envFrom with a prefix; its values
// never appear in tug's output.
func TestObjectsSecret(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	const token = "s3cr3t-token-value"
	secret := `apiVersion: v1
kind: Secret
metadata:
  name: creds
type: Opaque
data:
  password: cGFzc3dvcmQtdmFsdWU=   # password-value
stringData:
  token: ` + token + `
`
	tg.writeManifest("secret.yaml", secret+"---\n"+objPod("sec", tg.image, `    env:
    - name: TOKEN
      valueFrom:
        secretKeyRef: {name: creds, key: token}
    envFrom:
    - prefix: S_
      secretRef: {name: creds}
    volumeMounts:
    - {name: creds, mountPath: /run/creds}
`, `  volumes:
  - name: creds
    secret: {secretName: creds}
`))
	c := tg.waitRunning(30*time.Second, "sec", "main", 0)
	tg.waitContent(c, "/run/creds/token", token)
	tg.waitContent(c, "/run/creds/password", "password-value")
	for _, f := range []string{"token", "password"} {
		fi, err := os.Stat(filepath.Join(fmt.Sprintf("/proc/%d/root", c.PID), "/run/creds", f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, %v; want mode 0600", f, fi, err)
		}
	}
	mi, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", c.PID))
	if err != nil {
		t.Fatal(err)
	}
	if line := findLine(string(mi), " /run/creds "); !strings.Contains(line, " - tmpfs ") {
		t.Fatalf("secret volume is not a tmpfs: %q", line)
	}
	env := tg.envOf(c)
	if env["TOKEN"] != token || env["S_password"] != "password-value" || env["S_token"] != token {
		t.Fatalf("env: TOKEN=%q S_password=%q S_token=%q", env["TOKEN"], env["S_password"], env["S_token"])
	}
	if out := tg.output(); strings.Contains(out, token) || strings.Contains(out, "password-value") {
		t.Fatalf("a secret value is in tug's output:\n%s", out)
	}
}

// TestObjectsMissing: a pod whose ConfigMap is missing waits with
// CreateContainerConfigError naming it; the ConfigMap arrives in another
// file of the directory and the pod starts. An optional reference to a
// missing Secret does not stop it.
func TestObjectsMissing(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("pod.yaml", objPod("late", tg.image, `    env:
    - name: OPT
      valueFrom:
        secretKeyRef: {name: nowhere, key: k, optional: true}
    volumeMounts:
    - {name: cfg, mountPath: /etc/app}
`, `  volumes:
  - name: cfg
    configMap: {name: later}
`))
	tg.waitPod(20*time.Second, "late", "CreateContainerConfigError naming the ConfigMap", func(v *podview.View) error {
		for _, cs := range v.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason == pod.ReasonCreateContainerConfigError && strings.Contains(w.Message, `configmap "later" not found`) {
				return nil
			}
		}
		for _, cs := range v.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				return fmt.Errorf("waiting: %s: %s", w.Reason, w.Message)
			}
		}
		return fmt.Errorf("not waiting")
	})
	if cs, _ := tg.podContainers(tg.uid("late")); len(cs) != 0 {
		t.Fatalf("containers created without the ConfigMap: %v", cs)
	}
	// A Warning event names the missing object.
	evs, err := tg.api().Events(context.Background(), api.EventQuery{UID: tg.uid("late")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(e events.Event) bool {
		return e.Type == "Warning" && e.Reason == "FailedMount" && strings.Contains(e.Message, `volume "cfg": configmap "later" not found`)
	}) {
		t.Errorf("no Warning FailedMount event naming the ConfigMap: %+v", evs)
	}
	tg.writeManifest("later.yaml", configMap("later", "  k: v\n"))
	c := tg.waitRunning(30*time.Second, "late", "main", 0)
	tg.waitContent(c, "/etc/app/k", "v")
	if _, ok := tg.envOf(c)["OPT"]; ok {
		t.Fatal("OPT set from a missing optional secret")
	}
}

// TestObjectsDownwardAPI: fieldRef and resourceFieldRef (with a divisor)
// in env and in a downwardAPI volume; a label change reaches the labels
// file in place, without a restart.
func TestObjectsDownwardAPI(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	manifest := func(tier string) string {
		return strings.Replace(objPod("dapi", tg.image, `    resources:
      limits: {memory: 64Mi, cpu: 500m}
    env:
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: POD_NS
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    - name: APP
      valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}
    - name: MEM_MI
      valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}
    - name: CPU_M
      valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}
    volumeMounts:
    - {name: info, mountPath: /etc/podinfo}
`, `  volumes:
  - name: info
    downwardAPI:
      items:
      - path: labels
        fieldRef: {fieldPath: metadata.labels}
      - path: name
        fieldRef: {fieldPath: metadata.name}
      - path: mem
        resourceFieldRef: {containerName: main, resource: limits.memory, divisor: 1Mi}
`), "    app: demo\n", "    app: demo\n    tier: "+tier+"\n", 1)
	}
	tg.writeManifest("dapi.yaml", manifest("one"))
	c := tg.waitRunning(30*time.Second, "dapi", "main", 0)
	env := tg.envOf(c)
	want := map[string]string{"POD_NAME": staticName("dapi"), "POD_NS": "default", "APP": "demo", "MEM_MI": "64", "CPU_M": "500"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("env %s=%q, want %q", k, env[k], v)
		}
	}
	if ip := env["POD_IP"]; ip == "" || !strings.Contains(ip, ".") {
		t.Errorf("env POD_IP=%q, want the pod's address", ip)
	}
	tg.waitContent(c, "/etc/podinfo/name", staticName("dapi"))
	tg.waitContent(c, "/etc/podinfo/mem", "64")
	tg.waitContent(c, "/etc/podinfo/labels", "app=\"demo\"\ntier=\"one\"")

	tg.writeManifest("dapi.yaml", manifest("two"))
	tg.waitContent(c, "/etc/podinfo/labels", "app=\"demo\"\ntier=\"two\"")
	if now := tg.waitRunning(5*time.Second, "dapi", "main", 0); now.PID != c.PID {
		t.Fatalf("container restarted for a label change: %s -> %s", c, now)
	}
}

// TestObjectsClaim: a PersistentVolumeClaim is a local directory that
// keeps its data when the pod is deleted and added again, and across an
// update of the pod that recreates its container.
func TestObjectsClaim(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("claim.yaml", `apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 10Mi}
`)
	podYAML := func(gen string) string {
		return objPod("store", tg.image, `    env:
    - {name: GEN, value: "`+gen+`"}
    volumeMounts:
    - {name: data, mountPath: /data}
`, `  volumes:
  - name: data
    persistentVolumeClaim: {claimName: data}
`)
	}
	write := func(c ctr, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(fmt.Sprintf("/proc/%d/root", c.PID), "/data", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tg.writeManifest("pod.yaml", podYAML("1"))
	c := tg.waitRunning(30*time.Second, "store", "main", 0)
	write(c, "first", "kept")

	// Delete the pod, wait until it is gone, add it again.
	if err := os.Remove(tg.manifestPath("pod.yaml")); err != nil {
		t.Fatal(err)
	}
	tg.waitFor(30*time.Second, "pod removed", func() (bool, error) {
		cs, err := tg.podContainers(tg.uid("store"))
		return err == nil && len(cs) == 0, err
	})
	tg.writeManifest("pod.yaml", podYAML("1"))
	c2 := tg.waitRunning(30*time.Second, "store", "main", 0)
	if c2.ID == c.ID && c2.PID == c.PID {
		t.Fatal("the pod was not recreated")
	}
	tg.waitContent(c2, "/data/first", "kept")
	write(c2, "second", "also")

	// An update that recreates the container.
	tg.writeManifest("pod.yaml", podYAML("2"))
	c3 := tg.waitRunning(30*time.Second, "store", "main", 1)
	if g := tg.envOf(c3)["GEN"]; g != "2" {
		t.Fatalf("not the updated container: GEN=%q (%s)", g, c3)
	}
	tg.waitContent(c3, "/data/first", "kept")
	tg.waitContent(c3, "/data/second", "also")
	claimDir := filepath.Join(tg.rootDir, "claims", "default", "data")
	if _, err := os.Stat(filepath.Join(claimDir, "first")); err != nil {
		t.Fatalf("claim directory: %v", err)
	}

	// A tug restart: the container is adopted, the data is there.
	must(t, tg.Stop())
	tg.Start()
	c4 := tg.waitRunning(30*time.Second, "store", "main", 1)
	tg.waitContent(c4, "/data/second", "also")

	// The claim goes while the pod still uses it: the directory stays;
	// the pod goes too: the directory is removed.
	must(t, os.Remove(tg.manifestPath("claim.yaml")))
	time.Sleep(2 * fileCheck)
	if _, err := os.Stat(filepath.Join(claimDir, "first")); err != nil {
		t.Fatalf("claim directory of a claim still in use: %v", err)
	}
	must(t, os.Remove(tg.manifestPath("pod.yaml")))
	tg.waitFor(30*time.Second, "claim directory removed", func() (bool, error) {
		_, err := os.Stat(claimDir)
		return os.IsNotExist(err), nil
	})
}

// TestObjectsURLBundle: a URL bundle carries a Secret beside its pod; a
// new version of the bundle changes the Secret and the file changes in the
// running container; the pod of the directory source does not see the
// bundle's Secret (objects bind within their source).
func TestObjectsURLBundle(t *testing.T) {
	t.Parallel()
	image, _ := testutil.TestImage(t)
	bundle := func(v string) string {
		return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: key\nstringData:\n  k: " + v + "\n---\n" +
			objPod("urlsec", image, "    volumeMounts:\n    - {name: s, mountPath: /s}\n", "  volumes:\n  - name: s\n    secret: {secretName: key}\n")
	}
	srv := newManifestServer(t, good(bundle("one")))
	tg := urlTug(t, srv.url)
	c := tg.waitRunningUID(startTimeout, urlUID(srv.url, "urlsec"), "main", 0)
	tg.waitContent(c, "/s/k", "one")
	srv.set(good(bundle("two")))
	tg.waitContent(c, "/s/k", "two")

	tg.writeManifest("local.yaml", objPod("local", tg.image, "    volumeMounts:\n    - {name: s, mountPath: /s}\n", "  volumes:\n  - name: s\n    secret: {secretName: key}\n"))
	tg.waitPod(20*time.Second, "local", "waiting for its own source's Secret", func(v *podview.View) error {
		for _, cs := range v.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason == pod.ReasonCreateContainerConfigError && strings.Contains(w.Message, `secret "key" not found`) {
				return nil
			}
		}
		return fmt.Errorf("not waiting for the Secret")
	})
}
