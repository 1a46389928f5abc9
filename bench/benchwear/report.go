package main

import (
	"fmt"
	"io"
	"time"

	"tug/bench/internal/kit"
)

func printReport(w io.Writer, o options, window time.Duration, subjects []*subject, containerd kit.IO, cdErr error) {
	sec := window.Seconds()
	fmt.Fprintf(w, "\nbenchwear: four tugs with %d resting pods each (busybox sleep), default settings, %v window after %v of settling, extrapolated to a day;\n",
		o.pods, window.Round(time.Millisecond), o.settle)
	fmt.Fprintf(w, "the reporting ones sign status documents and push metrics by remote write to receivers that answer 204 at once; baseline: %s\n\n", baseName(o))
	t := kit.Table{Header: []string{"tug", "write_bytes /day", "cancelled /day", "file bytes /day", "files created /day", "fsyncs /day", "renames /day", "requests in window", "its shims' write_bytes /day"}}
	for _, s := range subjects {
		d := s.io1.Sub(s.io0)
		t.Row(s.name, bytesPerDay(d.WriteBytes, sec), bytesPerDay(d.CancelledWriteBytes, sec),
			bytesPerDay(s.traced.storage.bytes, sec), perDay(s.traced.storage.created, sec),
			perDay(s.traced.storage.fsyncs, sec), perDay(s.traced.storage.renames, sec),
			s.req, bytesPerDay(s.shim1.Sub(s.shim0).WriteBytes, sec))
	}
	t.Write(w, o.Markdown)
	fmt.Fprintln(w, "\nwrite_bytes: /proc/PID/io of tug's process alone (its shims beside it; containerd below). File bytes, files, fsyncs, renames: strace -f -y of tug,")
	fmt.Fprintln(w, "the calls on tug's root directory and pod logs (the storage of a device; the run directory is tmpfs there, tug's log its stderr).")
	if cdErr == nil {
		fmt.Fprintf(w, "containerd (the whole daemon, shared with whatever else the test environment runs): write_bytes %s /day\n", bytesPerDay(containerd.WriteBytes, sec))
	} else {
		fmt.Fprintf(w, "containerd: not read (%v)\n", cdErr)
	}

	fmt.Fprintln(w, "\nbreakdown by path (relative to the tug's work directory; numbers as #), per day:")
	for _, s := range subjects {
		b := kit.Table{Header: []string{s.name, "where on a device", "bytes", "writes", "created", "fsyncs", "renames", "removed"}}
		keys := s.traced.keys()
		for _, k := range keys {
			c := s.traced.byKey[k]
			b.Row(k, where(k), bytesPerDay(c.bytes, sec), perDay(c.writes, sec), perDay(c.created, sec),
				perDay(c.fsyncs, sec), perDay(c.renames, sec), perDay(c.removes, sec))
		}
		if len(keys) == 0 {
			b.Row("(no file written)", "", "", "", "", "", "", "")
		}
		fmt.Fprintln(w)
		b.Write(w, o.Markdown)
	}

	fmt.Fprintln(w)
	for _, pair := range [][2]int{{0, 2}, {1, 3}} {
		base, tree := subjects[pair[0]], subjects[pair[1]]
		bb, tb := base.io1.Sub(base.io0).WriteBytes, tree.io1.Sub(tree.io0).WriteBytes
		fmt.Fprintf(w, "%s / %s, same run: write_bytes %s (%s → %s a day), fsyncs %s\n", tree.name, base.name,
			kit.RatioString(float64(tb), float64(bb)), bytesPerDay(bb, sec), bytesPerDay(tb, sec),
			kit.RatioString(float64(tree.traced.storage.fsyncs), float64(base.traced.storage.fsyncs)))
	}
	rep := subjects[3]
	perDayBytes := float64(rep.io1.Sub(rep.io0).WriteBytes) * 86400 / sec
	fmt.Fprintf(w, "%s: %s a day (target ≤ %s)  %s\n", rep.name, human(perDayBytes), human(targetPerDay), kit.Verdict(perDayBytes <= targetPerDay))
}

func baseName(o options) string {
	if o.base != "" {
		return o.base
	}
	return "built from " + o.baseRev
}
