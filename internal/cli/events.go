package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"tug/internal/api"
	"tug/internal/cli/cmdflag"
	"tug/internal/events"
	"tug/internal/podview"
)

const eventsUsage = `usage: tug events [-w] [-n NAMESPACE | -A] [-o wide|json|yaml|name] [--no-headers] [--socket PATH] [POD]

Lists the agent's recent events (Pulling, Pulled, Created, Started, Killing,
BackOff, Failed, FailedMount, ...), oldest first, like "kubectl get events":
LAST SEEN, TYPE, REASON, OBJECT, MESSAGE (and NAMESPACE unless -n is given;
-o wide adds SOURCE, FIRST SEEN and COUNT); POD keeps only that pod's (its
name as "tug pods" shows it). With -w, then prints each new event as it
happens until interrupted (with -o json, one event per line). tug keeps the
last 1000 events in memory; they are gone when it restarts.

`

// eventsCmd is "tug events". It returns the exit code: 1 when tug cannot be
// asked, 2 for a usage error.
func (e Env) eventsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("events")
	socket := fs.String("socket", e.Socket, "`path` of tug's API socket")
	ns := fs.StringP("namespace", "n", "", "only this `namespace`'s events (default: every namespace)")
	all := allNamespacesFlag(fs)
	watch := fs.BoolP("watch", "w", false, "after listing, print new events as they happen")
	out := outputFlags(fs, formatTable)
	pos, code, ok := cmdflag.Parse(fs, args, eventsUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return cmdflag.UsageError(stderr, eventsUsage, "tug events takes at most one pod name")
	}
	if err := out.check(); err != nil {
		return cmdflag.UsageError(stderr, eventsUsage, err.Error())
	}
	if *all {
		*ns = ""
	}
	q := api.EventQuery{Namespace: *ns}
	if len(pos) == 1 {
		q.Pod = pos[0]
	}
	client := &api.Client{SocketPath: *socket}
	p := eventPrinter{w: stdout, format: out.format, noHeaders: out.noHeaders, namespace: *ns == ""}
	var err error
	if *watch {
		ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		p.watching = true
		err = client.WatchEvents(ctx, q, func(we api.WatchEvent) error { return p.print([]events.Event{we.Object}) })
	} else {
		var evs []events.Event
		if evs, err = client.Events(ctx, q); err == nil {
			if len(evs) == 0 && (p.format == formatTable || p.format == formatWide) {
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

// eventList is what -o json and -o yaml print without -w: a
// Kubernetes-shaped EventList.
type eventList struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Items      []events.Event `json:"items"`
}

// eventPrinter prints events as kubectl's table (its header once), as
// names, or as JSON or YAML: one list, or each event alone when watching.
type eventPrinter struct {
	w         io.Writer
	format    string
	noHeaders bool
	namespace bool // a NAMESPACE column
	watching  bool // events come one at a time
	header    bool // printed
}

func (p *eventPrinter) print(evs []events.Event) error {
	switch p.format {
	case formatJSON, formatYAML:
		if !p.watching {
			list := eventList{APIVersion: "v1", Kind: "EventList", Items: evs}
			if list.Items == nil {
				list.Items = []events.Event{}
			}
			if p.format == formatJSON {
				return writeJSON(p.w, list)
			}
			return writeYAML(p.w, list)
		}
		for _, e := range evs {
			var err error
			if p.format == formatJSON {
				err = writeJSONLine(p.w, e)
			} else {
				_, err = fmt.Fprintln(p.w, "---")
				if err == nil {
					err = writeYAML(p.w, e)
				}
			}
			if err != nil {
				return err
			}
		}
		return nil
	case formatName:
		var b strings.Builder
		for _, e := range evs {
			fmt.Fprintf(&b, "event/%s.%x\n", e.InvolvedObject.Name, e.Seq)
		}
		return writeEscaped(p.w, b.String())
	}
	if len(evs) == 0 {
		return nil
	}
	wide := p.format == formatWide
	tw := tabwriter.NewWriter(p.w, 0, 8, 3, ' ', 0)
	if !p.header && !p.noHeaders {
		if p.namespace {
			fmt.Fprint(tw, "NAMESPACE\t")
		}
		fmt.Fprint(tw, "LAST SEEN\tTYPE\tREASON\tOBJECT\t")
		if wide {
			fmt.Fprint(tw, "SOURCE\tFIRST SEEN\tCOUNT\t")
		}
		fmt.Fprintln(tw, "MESSAGE")
	}
	p.header = true
	now := time.Now()
	for _, e := range evs {
		if p.namespace {
			fmt.Fprint(tw, escape(e.InvolvedObject.Namespace)+"\t")
		}
		seen := api.HumanDuration(now.Sub(e.LastTimestamp))
		if e.Count > 1 && !wide {
			seen += fmt.Sprintf(" (x%d over %s)", e.Count, api.HumanDuration(now.Sub(e.FirstTimestamp)))
		}
		kind := "pod"
		if e.InvolvedObject.Kind == "Node" {
			kind = "node"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s/%s\t", seen, escape(e.Type), escape(e.Reason), kind, escape(e.InvolvedObject.Name))
		if wide {
			source := e.Source.Component
			if e.Source.Host != "" {
				source += ", " + e.Source.Host
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t", escape(source), api.HumanDuration(now.Sub(e.FirstTimestamp)), max(e.Count, 1))
		}
		fmt.Fprintln(tw, escape(e.Message))
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
	podview.View `yaml:",inline"`
	LastEvent    *events.Event `json:"lastEvent,omitempty" yaml:"lastEvent,omitempty"`
}

// withLastEvent adds the pod's most recent event to v. An agent without
// GET /events (an older tug) or no event leaves it out.
func withLastEvent(ctx context.Context, c *api.Client, v podview.View) inspected {
	out := inspected{View: v}
	evs, err := c.Events(ctx, api.EventQuery{Namespace: v.Metadata.Namespace, UID: v.Metadata.UID})
	if err == nil && len(evs) > 0 {
		out.LastEvent = &evs[len(evs)-1]
	}
	return out
}
