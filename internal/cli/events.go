package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"tug/internal/api"
	"tug/internal/events"
	"tug/internal/pod"
)

const eventsUsage = `usage: tug events [-w] [-n NAMESPACE] [-o json] [--socket PATH] [POD]

Lists the agent's recent events (Pulled, Created, Started, Killing, BackOff,
Failed, FailedMount, ...), oldest first, like "kubectl get events": LAST SEEN,
TYPE, REASON, OBJECT, MESSAGE (and NAMESPACE unless -n is given); POD keeps
only that pod's (its name as "tug pods" shows it). With -w, then prints each
new event as it happens until interrupted. tug keeps the last 1000 events in
memory; they are gone when it restarts.

`

// eventsCmd is "tug events". It returns the exit code: 1 when tug cannot be
// asked, 2 for a usage error.
func (e Env) eventsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tug events", flag.ContinueOnError)
	socket := fs.String("socket", e.Socket, "`path` of tug's API socket")
	var ns string
	fs.StringVar(&ns, "n", "", "only this `namespace`'s events (default: every namespace)")
	fs.StringVar(&ns, "namespace", "", "same as -n")
	var watch bool
	fs.BoolVar(&watch, "w", false, "after listing, print new events as they happen")
	fs.BoolVar(&watch, "watch", false, "same as -w")
	output := fs.String("o", "", "output `format`: json (one event per line), or the table when empty")
	pos, code, ok := parseFlags(fs, args, eventsUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(stderr, eventsUsage, "tug events takes at most one pod name")
	}
	if *output != "" && *output != "json" {
		return usageError(stderr, eventsUsage, fmt.Sprintf("unknown output format %q", *output))
	}
	q := api.EventQuery{Namespace: ns}
	if len(pos) == 1 {
		q.Pod = pos[0]
	}
	client := &api.Client{SocketPath: *socket}
	p := eventPrinter{w: stdout, json: *output == "json", namespace: ns == ""}
	var err error
	if watch {
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		err = client.WatchEvents(ctx, q, func(we api.WatchEvent) error { return p.print([]events.Event{we.Object}) })
	} else {
		var evs []events.Event
		if evs, err = client.Events(ctx, q); err == nil {
			if len(evs) == 0 && !p.json {
				fmt.Fprintln(stderr, "No events found.")
			}
			err = p.print(evs)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	return 0
}

// eventPrinter prints events as kubectl's table (its header once) or as
// JSON lines.
type eventPrinter struct {
	w         io.Writer
	json      bool
	namespace bool // a NAMESPACE column
	header    bool // printed
}

func (p *eventPrinter) print(evs []events.Event) error {
	if p.json {
		for _, e := range evs {
			if err := writeJSONLine(p.w, e); err != nil {
				return err
			}
		}
		return nil
	}
	if len(evs) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(p.w, 0, 8, 3, ' ', 0)
	if !p.header {
		p.header = true
		if p.namespace {
			fmt.Fprint(tw, "NAMESPACE\t")
		}
		fmt.Fprintln(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE")
	}
	now := time.Now()
	for _, e := range evs {
		if p.namespace {
			fmt.Fprint(tw, escape(e.InvolvedObject.Namespace)+"\t")
		}
		seen := api.HumanDuration(now.Sub(e.LastTimestamp))
		if e.Count > 1 {
			seen += fmt.Sprintf(" (x%d over %s)", e.Count, api.HumanDuration(now.Sub(e.FirstTimestamp)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\tpod/%s\t%s\n", seen, escape(e.Type), escape(e.Reason),
			escape(e.InvolvedObject.Name), escape(e.Message))
	}
	return tw.Flush()
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeEscaped(w, string(b)+"\n")
}

// inspected is what "tug inspect" prints: the pod and, when the agent has
// one, its most recent event.
type inspected struct {
	pod.View  `yaml:",inline"`
	LastEvent *events.Event `json:"lastEvent,omitempty" yaml:"lastEvent,omitempty"`
}

// withLastEvent adds the pod's most recent event to v. An agent without
// GET /events (an older tug) or no event leaves it out.
func withLastEvent(ctx context.Context, c *api.Client, v pod.View) inspected {
	out := inspected{View: v}
	evs, err := c.Events(ctx, api.EventQuery{Namespace: v.Metadata.Namespace, UID: v.Metadata.UID})
	if err == nil && len(evs) > 0 {
		out.LastEvent = &evs[len(evs)-1]
	}
	return out
}
