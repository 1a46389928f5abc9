//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// statefulSetYAML is a StatefulSet whose container writes, once, a file
// in each of its two claims (data and wal) naming the generation that
// wrote it, then idles. whenDeleted is its claims' retention ("" for the
// default, Retain).
func statefulSetYAML(name, image, gen, whenDeleted string) string {
	policy := ""
	if whenDeleted != "" {
		policy = "  persistentVolumeClaimRetentionPolicy: {whenDeleted: " + whenDeleted + "}\n"
	}
	script := `[ -e /data/first ] || echo "data $GEN" > /data/first; [ -e /wal/first ] || echo "wal $GEN" > /wal/first; ` + idle
	return fmt.Sprintf(`apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: %[1]s
spec:
  serviceName: %[1]s
  selector:
    matchLabels: {app: %[1]s}
%[5]s  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
        - name: main
          image: %[2]s
          command: ["sh", "-c", %[3]s]
          env:
            - {name: GEN, value: "%[4]s"}
          volumeMounts:
            - {name: data, mountPath: /data}
            - {name: wal, mountPath: /wal}
  volumeClaimTemplates:
    - metadata: {name: data}
      spec:
        accessModes: [ReadWriteOnce]
        resources:
          requests: {storage: 10Mi}
    - metadata: {name: wal}
      spec:
        accessModes: [ReadWriteOnce]
        resources:
          requests: {storage: 10Mi}
`, name, image, q(script), gen, policy)
}

// TestStatefulSetClaimTemplates: a StatefulSet's two claim templates are
// two local claims, <template>-<set>-0, mounted in its pod; what the
// container writes in them is still there when the pod is re-created for
// a spec change, when it is re-created across a tug restart, and when
// the file is removed and added again (whenDeleted Retain, the default,
// keeps the claims; a set with whenDeleted Delete loses its own, which
// also shows that housekeeping ran). describe names the claims.
func TestStatefulSetClaimTemplates(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("db.yaml", statefulSetYAML("db", tg.image, "1", ""))
	tg.writeManifest("tmp.yaml", statefulSetYAML("tmp", tg.image, "1", "Delete"))

	c := tg.waitRunning(startTimeout, "db-pod", "main", 0)
	tg.waitContent(c, "/data/first", "data 1\n")
	tg.waitContent(c, "/wal/first", "wal 1\n")
	tmp := tg.waitRunning(startTimeout, "tmp-pod", "main", 0)
	tg.waitContent(tmp, "/data/first", "data 1\n")
	claims := filepath.Join(tg.rootDir, "claims", "default")
	for _, claim := range []string{"data-db-0", "wal-db-0", "data-tmp-0", "wal-tmp-0"} {
		if _, err := os.Stat(filepath.Join(claims, claim, "first")); err != nil {
			t.Fatalf("claim %s: %v", claim, err)
		}
	}

	out, stderr, code := tg.runCLI("describe", "db-pod")
	for _, claim := range []string{"data-db-0", "wal-db-0"} {
		if code != 0 || !regexp.MustCompile(`ClaimName:\s+`+claim+`\n`).MatchString(out) {
			t.Fatalf("tug describe db-pod (exit %d) does not name the claim %s:\n%s%s", code, claim, out, stderr)
		}
	}
	if out, _, code := tg.runCLI("pods", "-o", "yaml"); code != 0 || !regexp.MustCompile(`claimName: data-db-0\n`).MatchString(out) {
		t.Fatalf("tug pods -o yaml (exit %d) does not name the claim data-db-0:\n%s", code, out)
	}

	// A spec change re-creates the container: the files are there.
	tg.writeManifest("db.yaml", statefulSetYAML("db", tg.image, "2", ""))
	c = tg.waitRunning(startTimeout, "db-pod", "main", 1)
	if gen := tg.envOf(c)["GEN"]; gen != "2" {
		t.Fatalf("not the updated container: GEN=%q", gen)
	}
	tg.waitContent(c, "/data/first", "data 1\n")
	tg.waitContent(c, "/wal/first", "wal 1\n")

	// A change while tug is down: the container is re-created at start.
	must(t, tg.Stop())
	tg.writeManifest("db.yaml", statefulSetYAML("db", tg.image, "3", ""))
	tg.Start()
	c = tg.waitRunning(startTimeout, "db-pod", "main", 2)
	if gen := tg.envOf(c)["GEN"]; gen != "3" {
		t.Fatalf("not the container changed across the restart: GEN=%q", gen)
	}
	tg.waitContent(c, "/data/first", "data 1\n")
	tg.waitContent(c, "/wal/first", "wal 1\n")

	// Both files removed: the Delete set's claims go, the Retain set's
	// stay.
	must(t, os.Remove(tg.manifestPath("db.yaml")))
	must(t, os.Remove(tg.manifestPath("tmp.yaml")))
	for _, name := range []string{"db-pod", "tmp-pod"} {
		tg.waitFor(removeTimeout, name+" removed", func() (bool, error) {
			cs, err := tg.podContainers(tg.uid(name))
			return err == nil && len(cs) == 0, err
		})
	}
	tg.waitFor(removeTimeout, "the claims of the Delete set removed", func() (bool, error) {
		_, e1 := os.Stat(filepath.Join(claims, "data-tmp-0"))
		_, e2 := os.Stat(filepath.Join(claims, "wal-tmp-0"))
		return os.IsNotExist(e1) && os.IsNotExist(e2), nil
	})
	for _, claim := range []string{"data-db-0", "wal-db-0"} {
		if _, err := os.Stat(filepath.Join(claims, claim, "first")); err != nil {
			t.Fatalf("the retained claim %s: %v", claim, err)
		}
	}

	// The file again: a new pod, the same claims.
	tg.writeManifest("db.yaml", statefulSetYAML("db", tg.image, "4", ""))
	c2 := tg.waitRunning(startTimeout, "db-pod", "main", 0)
	if c2.ID == c.ID {
		t.Fatal("the pod was not re-created")
	}
	tg.waitContent(c2, "/data/first", "data 1\n")
	tg.waitContent(c2, "/wal/first", "wal 1\n")
}

// TestWorkloadMetadataNotString: a StatefulSet whose own annotation is a
// number is refused with its file, line, column and field, as the API
// server refuses it; the pod of another file keeps running, and the
// StatefulSet's pod never starts.
func TestWorkloadMetadataNotString(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	tg.writeManifest("other.yaml", shPod("other", tg.image, idle))
	before := tg.waitRunning(startTimeout, "other", "main", 0)

	tg.writeManifest("set.yaml", `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: revised
  annotations: {revision: 2}
spec:
  selector:
    matchLabels: {app: revised}
  template:
    metadata:
      labels: {app: revised}
    spec:
      containers:
        - name: main
          image: `+tg.image+`
          command: ["sh", "-c", "sleep 3600"]
`)
	line := tg.waitForOutput(logTimeout, tg.manifestPath("set.yaml")+":5:27: metadata.annotations[revision]: expected a string")
	t.Logf("refused: %s", line)
	time.Sleep(tg.fileCheck + time.Second)
	cs, err := tg.podContainers(tg.uid("revised-pod"))
	if err != nil || len(cs) != 0 {
		t.Fatalf("the refused StatefulSet's pod has containers %v (%v)", cs, err)
	}
	after, ok, err := tg.container(tg.uid("other"), "main")
	if err != nil || !ok || after.ID != before.ID || after.PID != before.PID {
		t.Fatalf("the other file's pod changed: before %v, after %v (%v, %v)", before, after, ok, err)
	}
}
