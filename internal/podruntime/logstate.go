package podruntime

import (
	"context"
	"strconv"

	"tug/internal/pod"
	"tug/internal/podlabels"
	"tug/internal/podlogs"
)

// identifyAttempt returns the container ID and CRI log path of an attempt
// of a container of pod uid, found by its labels, for the file driver's
// converter to rebuild a state file a power cut damaged
// (podlogs.Tasks.Identify).
func (r *Runtime) identifyAttempt(uid, container string, attempt int) (id, cri string, ok bool) {
	ctx, cancel := context.WithTimeout(r.ctx(context.Background()), DefaultConnectTimeout)
	defer cancel()
	recs, err := r.client.ContainerService().List(ctx,
		`labels."`+podlabels.LabelPodUID+`"==`+strconv.Quote(uid)+`,labels."`+podlabels.LabelContainer+`"==`+strconv.Quote(container)+
			`,labels."`+podlabels.LabelAttempt+`"==`+strconv.Quote(strconv.Itoa(attempt)))
	if err != nil || len(recs) != 1 {
		return "", "", false
	}
	l := recs[0].Labels
	p := &pod.Pod{Metadata: pod.ObjectMeta{UID: uid, Name: l[podlabels.LabelPodName], Namespace: l[podlabels.LabelPodNamespace]}}
	return recs[0].ID, podlogs.ContainerPath(r.cfg.LogsDir, p, container, attempt), true
}
