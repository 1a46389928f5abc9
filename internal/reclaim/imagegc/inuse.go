package imagegc

import "tug/internal/pod"

// InUseOf is what an InUse reports: every container's image, by the name
// it was created with (and that name normalized, "busybox" as
// "docker.io/library/busybox:latest") and by its image ID; every image a
// wanted pod names (its init and app containers', its image volumes');
// and mountedVolumes, the images of the image volumes mounted now (by
// name and digest). normalize returns an error for a name it cannot parse,
// which is then kept as written only.
func InUseOf(containers []pod.RuntimeContainer, wanted []*pod.Pod, mountedVolumes []string, normalize func(string) (string, error)) map[string]bool {
	used := map[string]bool{}
	add := func(ref string) {
		used[ref] = true
		if n, err := normalize(ref); err == nil {
			used[n] = true
		}
	}
	for _, c := range containers {
		add(c.Image)
		if c.ImageID != "" {
			used[c.ImageID] = true
		}
	}
	for _, p := range wanted {
		for _, list := range [][]pod.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for _, c := range list {
				add(c.Image)
			}
		}
		for _, v := range p.Spec.Volumes {
			if v.Image != nil {
				add(v.Image.Reference)
			}
		}
	}
	for _, ref := range mountedVolumes {
		used[ref] = true
	}
	return used
}
