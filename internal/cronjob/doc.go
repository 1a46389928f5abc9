// Package cronjob owns the running of CronJobs on the device's clock. It
// sits between the sources and the pod store: a source's snapshot passes
// through Scheduler.Set, which takes out the pods of CronJob templates
// (pod.Pod.CronJob set) and adds, for each file that defines CronJobs, a
// file of the same source named "<file>#cronjob" whose pods are the runs
// (one Job pod per schedule slot, "<cronjob>-<minutes since the
// epoch>-pod"). The runs thus carry their CronJob's source, and with it its
// admission policy and objects. Scheduler.Run starts runs when their slot
// comes, as the Kubernetes CronJob controller decides (Decide), drops the
// finished runs beyond the history limits (Prune) and persists each
// CronJob's last schedule time and runs in one state file, written
// atomically, so that a restart or a power cut neither loses nor repeats
// a run; a damaged or missing file is rebuilt from the runs that still
// have containers (Restore, given them by the agent).
//
// It imports pod, cronspec, clock and atomicfile; what it reads of the
// pods' status and where it records events are interfaces it defines.
package cronjob
