package podruntime

import (
	"context"
	"errors"
	"slices"
	"testing"

	"tug/internal/pod"
	"tug/internal/specopts"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// partsVolumes records the volume manager's part in a pod's clean-up and
// fails Remove when failRemove is set. Its other methods are not called.
type partsVolumes struct {
	Volumes
	calls      *[]string
	failRemove bool
}

func (v partsVolumes) Remove(string) error {
	*v.calls = append(*v.calls, "volumes")
	if v.failRemove {
		return errors.New("device busy")
	}
	return nil
}

func (v partsVolumes) RemoveImageViews(context.Context, string) error {
	*v.calls = append(*v.calls, "image volume views")
	return nil
}

func (v partsVolumes) Prepare(*pod.Pod, pod.Sandbox) error {
	*v.calls = append(*v.calls, "prepare volumes")
	return nil
}

// partsReleaser records a release.
type partsReleaser struct {
	name  string
	calls *[]string
}

func (r partsReleaser) Release(string) error {
	*r.calls = append(*r.calls, r.name)
	return nil
}

// TestPodPartsCleanup: a pod's parts are cleaned up in the reverse order
// of their preparation, and a part that fails stops the clean-up, so the
// image volume views stay while the volumes that mount them do.
func TestPodPartsCleanup(t *testing.T) {
	tests := []struct {
		name       string
		failRemove bool
		want       []string
		wantErr    bool
	}{
		{name: "every part, in reverse order", want: []string{"volumes", "image volume views", "devices", "user namespace"}},
		{name: "a failed part stops the clean-up", failRemove: true, want: []string{"volumes"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []string
			dir := t.TempDir()
			r := &Runtime{
				cfg: Config{LogsDir: dir, RootDir: dir,
					Devices:        partsDevices{partsReleaser{"devices", &calls}},
					UserNamespaces: partsUserNS{partsReleaser{"user namespace", &calls}}},
				volumes: partsVolumes{calls: &calls, failRemove: tt.failRemove},
			}
			err := r.RemovePodDirs("uid-1")
			if (err != nil) != tt.wantErr {
				t.Fatalf("RemovePodDirs = %v, want error %v", err, tt.wantErr)
			}
			if !slices.Equal(calls, tt.want) {
				t.Errorf("clean-up calls %q, want %q", calls, tt.want)
			}
		})
	}
}

// partsDevices and partsUserNS release through partsReleaser; their other
// methods are not called.
type partsDevices struct{ partsReleaser }

func (partsDevices) ContainerDevices(*pod.Pod, *pod.Container) ([]specopts.DeviceNode, []string, error) {
	return nil, nil, nil
}

func (partsDevices) InjectCDI(*specs.Spec, []string) error { return nil }

type partsUserNS struct{ partsReleaser }

func (partsUserNS) Mapping(string) (pod.IDMapping, error) { return pod.IDMapping{}, nil }
