//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"gopkg.in/yaml.v3"

	"tug/internal/api"
	"tug/internal/pod"
	"tug/internal/podview"
)

// brokenManifest has an unknown field on line 9, column 7.
const brokenManifest = `apiVersion: v1
kind: Pod
metadata:
  name: broken
spec:
  containers:
    - name: main
      image: busybox
      imagee: busybox
`

func TestAPI(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	tg := startTug(t, tugOpts{healthzPort: port})
	tg.writeManifest("api-a.yaml", shPod("api-a", tg.image, idle))
	tg.writeManifest("api-b.yaml", podYAML{name: "api-b", containers: []ctrYAML{
		{name: "one", image: tg.image, script: idle},
		{name: "two", image: tg.image, script: idle},
	}}.String())
	tg.writeManifest("broken.yaml", brokenManifest)
	brokenFile := tg.manifestPath("broken.yaml")
	tg.waitRunning(startTimeout, "api-a", "main", 0)
	tg.waitRunning(startTimeout, "api-b", "one", 0)
	tg.waitRunning(startTimeout, "api-b", "two", 0)
	running := func(v *podview.View) error {
		if v.Status.Phase != pod.PhaseRunning {
			return fmt.Errorf("phase %q", v.Status.Phase)
		}
		for _, cs := range v.Status.ContainerStatuses {
			if cs.State.Running == nil || !cs.Ready {
				return fmt.Errorf("container %s not running and ready", cs.Name)
			}
			// startedAt comes from a label tug sets just after the task has
			// started; a relist woken by the start event may see the task
			// before the label for up to one relist period.
			if cs.State.Running.StartedAt.IsZero() {
				return fmt.Errorf("container %s runs without startedAt", cs.Name)
			}
		}
		return nil
	}
	tg.waitPod(logTimeout, "api-a", "Running", running)
	tg.waitPod(logTimeout, "api-b", "Running", running)

	ctrs, err := tg.containers()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]ctr{}
	for _, c := range ctrs {
		byID[c.ID] = c
	}
	imageDigest := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
		defer cancel()
		img, err := tg.client.GetImage(ctx, tg.image)
		if err != nil {
			t.Fatal(err)
		}
		return img.Target().Digest.String()
	}()

	t.Run("pods", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		list, err := tg.api().Pods(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if list.Kind != "PodList" || list.APIVersion != "v1" {
			t.Errorf("GET /pods: kind %q, apiVersion %q, want PodList, v1", list.Kind, list.APIVersion)
		}
		var names []string
		for _, v := range list.Items {
			names = append(names, v.Metadata.Name)
		}
		if want := []string{staticName("api-a"), staticName("api-b")}; strings.Join(names, " ") != strings.Join(want, " ") {
			t.Fatalf("GET /pods lists %q, want %q (sorted; the broken file has no pod)", names, want)
		}
		for _, v := range list.Items {
			if v.Kind != "Pod" || v.Metadata.Namespace != "default" || v.Metadata.UID != tg.uid(strings.TrimSuffix(v.Metadata.Name, "-"+hostname)) {
				t.Errorf("pod %s: kind %q, namespace %q, uid %q", v.Metadata.Name, v.Kind, v.Metadata.Namespace, v.Metadata.UID)
			}
			if v.Status.Phase != pod.PhaseRunning {
				t.Errorf("pod %s: phase %q, want Running", v.Metadata.Name, v.Status.Phase)
			}
			if v.Status.StartTime == nil || time.Since(*v.Status.StartTime) > time.Minute {
				t.Errorf("pod %s: startTime %v", v.Metadata.Name, v.Status.StartTime)
			}
			for _, cond := range []string{pod.ConditionInitialized, pod.ConditionContainersReady, pod.ConditionReady} {
				if !hasCondition(&v.Status, cond, "True") {
					t.Errorf("pod %s: condition %s is not True: %+v", v.Metadata.Name, cond, v.Status.Conditions)
				}
			}
			if len(v.Status.ContainerStatuses) != len(v.Spec.Containers) {
				t.Errorf("pod %s: %d container statuses for %d containers", v.Metadata.Name, len(v.Status.ContainerStatuses), len(v.Spec.Containers))
			}
			for _, cs := range v.Status.ContainerStatuses {
				id, ok := strings.CutPrefix(cs.ContainerID, "containerd://")
				c, found := byID[id]
				switch {
				case !ok || !found:
					t.Errorf("pod %s container %s: containerID %q is not containerd://<a container of the namespace>", v.Metadata.Name, cs.Name, cs.ContainerID)
				case c.Name() != cs.Name || c.UID() != v.Metadata.UID || c.Status != containerd.Running:
					t.Errorf("pod %s container %s: containerID names %v", v.Metadata.Name, cs.Name, c)
				}
				if cs.State.Running == nil {
					t.Errorf("pod %s container %s: state %+v, want running", v.Metadata.Name, cs.Name, cs.State)
				} else if at := cs.State.Running.StartedAt; found && (at.Before(c.CreatedAt) || time.Since(at) > time.Minute) {
					t.Errorf("pod %s container %s: startedAt %v, but the container was created at %v", v.Metadata.Name, cs.Name, at, c.CreatedAt)
				}
				if cs.ImageID != imageDigest || cs.Image != tg.image {
					t.Errorf("pod %s container %s: image %q, imageID %q, want %q, %q", v.Metadata.Name, cs.Name, cs.Image, cs.ImageID, tg.image, imageDigest)
				}
				if !cs.Ready || cs.RestartCount != 0 || cs.Started == nil || !*cs.Started {
					t.Errorf("pod %s container %s: ready %v, restartCount %d, started %v", v.Metadata.Name, cs.Name, cs.Ready, cs.RestartCount, cs.Started)
				}
			}
		}
	})

	t.Run("pod by name", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		for _, name := range []string{staticName("api-b"), "api-b"} { // static name, manifest name
			v, err := tg.api().Pod(ctx, "default", name)
			if err != nil {
				t.Fatalf("GET /pods/default/%s: %v", name, err)
			}
			if v.Metadata.Name != staticName("api-b") || len(v.Status.ContainerStatuses) != 2 || v.Status.Phase != pod.PhaseRunning {
				t.Errorf("GET /pods/default/%s: %s, phase %s, %s", name, v.Metadata.Name, v.Status.Phase, describeStatus(&v.Status))
			}
		}
		for _, path := range [][2]string{{"default", "nosuch"}, {"kube-system", "api-b"}} {
			_, err := tg.api().Pod(ctx, path[0], path[1])
			if !errors.Is(err, api.ErrNotFound) {
				t.Errorf("GET /pods/%s/%s: %v, want 404", path[0], path[1], err)
			}
		}
	})

	t.Run("manifests", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		ms, err := tg.api().Manifests(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byFile := map[string]podview.ManifestStatus{}
		for _, m := range ms {
			byFile[m.File] = m
		}
		for _, name := range []string{"api-a", "api-b"} {
			m, ok := byFile[tg.manifestPath(name+".yaml")]
			if !ok || m.Error != "" || len(m.UIDs) != 1 || m.UIDs[0] != tg.uid(name) || m.AppliedHash == "" || m.AppliedHash != m.Hash {
				t.Errorf("manifest of %s: %+v (found %v), want no error, its UID and the applied hash", name, m, ok)
			}
		}
		m, ok := byFile[brokenFile]
		if want := brokenFile + ":9:7: "; !ok || !strings.Contains(m.Error, want) || !strings.Contains(m.Error, "imagee") {
			t.Errorf("broken manifest: %+v (found %v), want an error with %q about imagee", m, ok, want)
		}
		if len(m.UIDs) != 0 {
			t.Errorf("broken manifest has applied pods %v", m.UIDs)
		}
	})

	t.Run("tug pods", func(t *testing.T) {
		out, stderr, code := tg.runCLI("pods")
		if code != 0 {
			t.Fatalf("tug pods exited %d: %s", code, stderr)
		}
		t.Logf("tug pods:\n%s", out)
		rows, rest, err := parsePodTable(out)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out, "NAME") || !regexp.MustCompile(`^NAME +READY +STATUS +RESTARTS +AGE\n`).MatchString(out) {
			t.Errorf("header is not NAME READY STATUS RESTARTS AGE:\n%s", out)
		}
		age := regexp.MustCompile(`^\d+s$`)
		for name, ready := range map[string]string{"api-a": "1/1", "api-b": "2/2"} {
			r := rows[staticName(name)]
			if r["READY"] != ready || r["STATUS"] != "Running" || r["RESTARTS"] != "0" || !age.MatchString(r["AGE"]) {
				t.Errorf("row of %s: %v, want READY %s, STATUS Running, RESTARTS 0, an AGE in seconds", name, r, ready)
			}
		}
		r := rows["broken.yaml"]
		if r["STATUS"] != "ManifestError" {
			t.Errorf("row of broken.yaml: %v, want STATUS ManifestError", r)
		}
		if len(rows) != 3 {
			t.Errorf("%d rows, want 3 (two pods, one broken file)", len(rows))
		}
		if !slicesContainPrefix(rest, brokenFile+":9:7: ") {
			t.Errorf("below the table: %q, want the error as %s:9:7: ...", rest, brokenFile)
		}
	})

	t.Run("tug inspect", func(t *testing.T) {
		out, stderr, code := tg.runCLI("inspect", "api-a")
		if code != 0 {
			t.Fatalf("tug inspect exited %d: %s", code, stderr)
		}
		var v struct {
			Kind     string `yaml:"kind"`
			Metadata struct {
				Name string `yaml:"name"`
				UID  string `yaml:"uid"`
			} `yaml:"metadata"`
			Status struct {
				Phase             string `yaml:"phase"`
				ContainerStatuses []struct {
					Name        string `yaml:"name"`
					ContainerID string `yaml:"containerID"`
					State       struct {
						Running *struct {
							StartedAt time.Time `yaml:"startedAt"`
						} `yaml:"running"`
					} `yaml:"state"`
				} `yaml:"containerStatuses"`
			} `yaml:"status"`
		}
		if err := yaml.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("tug inspect printed no YAML: %v\n%s", err, out)
		}
		cs := v.Status.ContainerStatuses
		if v.Kind != "Pod" || v.Metadata.Name != staticName("api-a") || v.Metadata.UID != tg.uid("api-a") ||
			v.Status.Phase != "Running" || len(cs) != 1 || cs[0].Name != "main" || cs[0].State.Running == nil ||
			cs[0].State.Running.StartedAt.IsZero() || !strings.HasPrefix(cs[0].ContainerID, "containerd://") {
			t.Errorf("tug inspect api-a:\n%s", out)
		}
		if _, stderr, code := tg.runCLI("inspect", "nosuch"); code == 0 || !strings.Contains(stderr, "nosuch") {
			t.Errorf("tug inspect nosuch: exit %d, stderr %q; want a failure naming the pod", code, stderr)
		}
	})

	t.Run("socket is root only", func(t *testing.T) {
		fi, err := os.Lstat(tg.socketPath())
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want a socket with mode 0600", tg.socketPath(), fi.Mode())
		}
	})

	t.Run("health port on loopback only", func(t *testing.T) {
		if err := tg.healthOK(); err != nil {
			t.Fatal(err)
		}
		ls, err := listeningTCP(tg.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("127.0.0.1:%d", port); len(ls) != 1 || ls[0] != want {
			t.Errorf("tug listens on TCP %q, want only %s", ls, want)
		}
		// The TCP port serves health, not the pod API.
		resp, err := tg.healthClient().Get(fmt.Sprintf("http://127.0.0.1:%d/pods", port))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /pods on the health port: %s, want 404", resp.Status)
		}
	})
}

func hasCondition(st *pod.Status, typ, status string) bool {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.Status == status
		}
	}
	return false
}

func slicesContainPrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// listeningTCP returns the local addresses ("127.0.0.1:10248", "[::]:80")
// of the listening TCP sockets process pid holds open.
func listeningTCP(pid int) ([]string, error) {
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A: LISTEN
				continue
			}
			addr, err := procNetAddr(f[1])
			if err != nil {
				return nil, err
			}
			out = append(out, addr)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// procNetAddr decodes an address of /proc/net/tcp{,6}: the IP as 32-bit
// words in host (little-endian) order, then the port, all in hex.
func procNetAddr(s string) (string, error) {
	hexIP, hexPort, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil || (len(hexIP) != 8 && len(hexIP) != 32) {
		return "", fmt.Errorf("bad address %q in /proc/net/tcp", s)
	}
	var ip []byte
	for i := 0; i < len(hexIP); i += 8 {
		w, err := strconv.ParseUint(hexIP[i:i+8], 16, 32)
		if err != nil {
			return "", fmt.Errorf("bad address %q in /proc/net/tcp", s)
		}
		ip = append(ip, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	host := net.IP(ip).String()
	if len(ip) == 16 {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("%s:%d", host, port), nil
}
