//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"

	"tug/internal/pod"
	"tug/internal/podlabels"
	"tug/internal/podruntime"
	"tug/internal/podview"
)

// TestContainerIDTakenIsNotRemoved plants, with the containerd client, a
// running container under the very ID tug will give a pod's first
// container, labelled as someone else's (another pod's name and namespace,
// no pod UID of tug's). Earlier, tug took any container under that ID for
// a leftover of its own failed start and deleted it (with its task): a pod
// whose name collided in the short ID killed another pod's container. Now
// tug leaves it running and reports the pod's container as not created,
// naming the conflict.
func TestContainerIDTakenIsNotRemoved(t *testing.T) {
	t.Parallel()
	tg := startTug(t, tugOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var img containerd.Image
	tg.waitFor(startTimeout, "the test image to be imported", func() (bool, error) {
		var err error
		img, err = tg.client.GetImage(ctx, tg.image)
		return err == nil, nil
	})

	if err := img.Unpack(ctx, podruntime.DefaultSnapshotter); err != nil {
		t.Fatal(err)
	}
	victim := &pod.Pod{Metadata: pod.ObjectMeta{Name: staticName("collide"), Namespace: "default", UID: tg.uid("collide")}}
	id := podlabels.ContainerID(victim, "main", 0)
	planted, err := tg.client.NewContainer(ctx, id,
		containerd.WithImage(img),
		containerd.WithNewSnapshot(id+"-planted", img),
		containerd.WithNewSpec(oci.WithImageConfig(img), oci.WithProcessArgs("sleep", "3600")),
		containerd.WithRuntime("io.containerd.runc.v2", nil),
		containerd.WithContainerLabels(map[string]string{
			podlabels.LabelPodName:      "someone-else",
			podlabels.LabelPodNamespace: "elsewhere",
			podlabels.LabelContainer:    "main",
		}),
	)
	if err != nil {
		t.Fatalf("plant container %s: %v", id, err)
	}
	task, err := planted.NewTask(ctx, cio.NullIO)
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pid := task.Pid()

	tg.writeManifest("collide.yaml", shPod("collide", tg.image, idle))
	v := tg.waitPod(startTimeout, "collide", "its container waiting on the taken ID", func(v *podview.View) error {
		for _, c := range v.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil && strings.Contains(w.Message, "container ID taken") {
				return nil
			}
		}
		return fmt.Errorf("no container waits with the conflict")
	})
	t.Logf("status: %s", describeStatus(&v.Status))
	line := tg.waitForOutput(logTimeout, "collide", "container ID taken", id)
	t.Logf("tug says: %s", line)

	st, err := task.Status(ctx)
	if err != nil {
		t.Fatalf("the planted container's task is gone: %v", err)
	}
	if st.Status != containerd.Running || task.Pid() != pid {
		t.Errorf("the planted container's task is %s (pid %d, was %d), want it running untouched", st.Status, task.Pid(), pid)
	}
	labels, err := planted.Labels(ctx)
	if err != nil || labels[podlabels.LabelPodName] != "someone-else" {
		t.Errorf("the planted container's labels = %v, %v", labels, err)
	}
	if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil {
		t.Errorf("delete the planted task: %v", err)
	}
}
