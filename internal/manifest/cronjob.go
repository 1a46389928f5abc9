package manifest

import (
	"errors"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"tug/internal/cronspec"
	"tug/internal/fieldpath"
	"tug/internal/pod"
)

// A CronJob (batch/v1) decodes into the pod of its jobTemplate, as a Job's,
// with pod.Pod.CronJob set: the cronjob scheduler runs copies of that pod
// on the schedule; the template itself never runs.

// maxCronJobName is Kubernetes' bound on a CronJob's name: its Jobs add
// "-<minutes since the epoch>" (11 characters) and must fit in 63.
const maxCronJobName = 52

// timeZonePart is what Kubernetes accepts in each part of an IANA name.
var timeZonePart = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// cronJob decodes a CronJob.
func (p *parser) cronJob(d *decoder, root *yaml.Node) {
	name, namespace, spec := p.workloadHead(d, root, "CronJob", "batch/v1", "spec.schedule and spec.jobTemplate")
	if name != nil && len(name.Value) > maxCronJobName {
		d.fail(name, "metadata.name", "must be no more than %d characters (its Jobs add the scheduled minute)", maxCronJobName)
	}
	if spec == nil {
		return
	}
	cj := &pod.CronJob{Name: name.Value, ConcurrencyPolicy: pod.ConcurrencyAllow,
		SuccessfulJobsHistoryLimit: 3, FailedJobsHistoryLimit: 1}
	if namespace != nil {
		cj.Namespace = namespace.Value
	}
	var jobTemplate, schedule *yaml.Node
	d.pairs(spec, "spec", func(k, v *yaml.Node, field string) {
		path := fieldpath.Join("spec", field)
		d.index.values[path] = posOf(v)
		switch field {
		case "schedule":
			schedule = v
			if s, ok := d.str(v, path); ok {
				cj.Schedule = s
				if _, err := cronspec.Parse(s); err != nil {
					d.fail(v, path, "%s", strings.TrimPrefix(err.Error(), cronspec.ErrSyntax.Error()+": "))
				}
			}
		case "timeZone":
			if s, ok := d.str(v, path); ok {
				if err := checkTimeZone(s); err != nil {
					d.fail(v, path, "%s", err.Error())
				}
				cj.TimeZone = s
			}
		case "concurrencyPolicy":
			if s, ok := d.str(v, path); ok {
				switch s {
				case pod.ConcurrencyAllow, pod.ConcurrencyForbid, pod.ConcurrencyReplace:
					cj.ConcurrencyPolicy = s
				default:
					d.fail(v, path, "unsupported value %q: must be \"Allow\", \"Forbid\" or \"Replace\"", s)
				}
			}
		case "startingDeadlineSeconds":
			if n, ok := d.integer(v, path, 64); ok {
				if n < 0 {
					d.fail(v, path, "must be greater than or equal to 0")
					return
				}
				cj.StartingDeadlineSeconds = &n
			}
		case "suspend":
			if b, ok := d.boolean(v, path); ok {
				cj.Suspend = b
			}
		case "successfulJobsHistoryLimit", "failedJobsHistoryLimit":
			if n, ok := d.integer(v, path, 32); ok {
				if n < 0 {
					d.fail(v, path, "must be greater than or equal to 0")
					return
				}
				if field == "successfulJobsHistoryLimit" {
					cj.SuccessfulJobsHistoryLimit = int32(n)
				} else {
					cj.FailedJobsHistoryLimit = int32(n)
				}
			}
		case "jobTemplate":
			jobTemplate = v
		default:
			d.report(k, path, "unknown field %q", field)
		}
	})
	if schedule == nil {
		d.fail(spec, "spec.schedule", "required: when the Job runs (5 cron fields or a macro such as @hourly)")
	}
	if jobTemplate == nil || jobTemplate.Kind != yaml.MappingNode {
		d.fail(spec, "spec.jobTemplate", "required: the Job to run")
		return
	}
	var jobSpec *yaml.Node
	d.pairs(jobTemplate, "spec.jobTemplate", func(k, v *yaml.Node, field string) {
		switch field {
		case "metadata":
			// The Job's labels and annotations: a Job object on a
			// cluster; its pod's are the template's.
		case "spec":
			jobSpec = v
		default:
			d.report(k, fieldpath.Join("spec.jobTemplate", field), "unknown field %q", field)
		}
	})
	if jobSpec == nil || jobSpec.Kind != yaml.MappingNode {
		d.fail(jobTemplate, "spec.jobTemplate.spec", "required: a Job needs spec.template")
		return
	}
	if pd := p.jobSpec(d, jobSpec, "spec.jobTemplate.spec", "Job", name, namespace); pd != nil {
		if cj.Namespace == "" {
			cj.Namespace = pd.Metadata.Namespace
		}
		pd.CronJob = cj
	}
}

// errUnknownTimeZone is the message of a time zone that does not load.
var errUnknownTimeZone = errors.New("unknown time zone")

// checkTimeZone checks an IANA time zone name as the API server does,
// then loads it from the device's time zone database
// (/usr/share/zoneinfo, or $ZONEINFO): tug embeds none.
func checkTimeZone(name string) error {
	if name == "" {
		return errors.New("must be an IANA time zone name (such as \"Etc/UTC\") or left out")
	}
	for _, part := range strings.Split(name, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZonePart.MatchString(part) {
			return errUnknownTimeZone
		}
	}
	if name == "Local" {
		return errors.New("unknown time zone \"Local\": leave timeZone out for the device's local time")
	}
	if _, err := time.LoadLocation(name); err != nil {
		return errors.New("unknown time zone: not in the device's time zone database (/usr/share/zoneinfo; the tzdata package)")
	}
	return nil
}
