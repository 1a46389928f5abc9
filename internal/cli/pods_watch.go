package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"tug/internal/api"
	"tug/internal/podview"
)

// "tug pods -w" is "kubectl get pods -w": the table once, then a row each
// time a pod's row changes, a pod appears or a pod goes away. The agent
// computes the changes (GET /pods?watch=true); the rows are "tug pods"'s.

// watchPods runs "tug pods -w" until interrupted or the agent goes away,
// and returns the exit code. opts are the table's; asJSON prints each pod
// as a JSON line instead (every change, as "kubectl get -w -o json").
func watchPods(ctx context.Context, c *api.Client, opts tableOptions, asJSON bool, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	pw := &podWatcher{client: c, opts: opts, json: asJSON, out: stdout, stderr: stderr,
		printed: map[string]string{}, now: time.Now}
	err := c.WatchPods(ctx, opts.namespace, func(e api.PodWatchEvent) error { return pw.handle(ctx, e) })
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	return 0
}

// podWatcher prints the events of a pod watch.
type podWatcher struct {
	client *api.Client // for the manifests the table and -o wide's FILE read
	opts   tableOptions
	json   bool
	out    io.Writer
	stderr io.Writer
	now    func() time.Time

	synced    bool              // the initial events are over (BOOKMARK) and the table printed
	initial   []podview.View    // the pods of the initial events
	namespace bool              // a NAMESPACE column
	files     map[string]string // pod UID -> its manifest file (-o wide)
	rows      rowPrinter
	printed   map[string]string // pod UID -> rowKey of the row last printed
}

// handle prints what one watch event changes.
func (pw *podWatcher) handle(ctx context.Context, e api.PodWatchEvent) error {
	if pw.json {
		if e.Type == api.WatchBookmark {
			return nil
		}
		return writeJSONLine(pw.out, e.Object)
	}
	if !pw.synced {
		if e.Type == api.WatchBookmark {
			return pw.printTable(ctx)
		}
		pw.initial = append(pw.initial, e.Object)
		return nil
	}
	v := &e.Object
	uid := v.Metadata.UID
	switch e.Type {
	case api.WatchBookmark:
		return nil
	case api.WatchAdded:
		if _, known := pw.files[uid]; pw.opts.wide && !known {
			pw.readFiles(ctx)
		}
	case api.WatchDeleted:
		// Always a row, as kubectl prints the object's last state: the pod
		// went away even when its row reads as before.
		delete(pw.printed, uid)
		return pw.rows.print(pw.cells(v, pw.now()))
	}
	cells := pw.cells(v, pw.now())
	key := rowKey(cells, pw.namespace)
	if pw.printed[uid] == key {
		return nil
	}
	pw.printed[uid] = key
	return pw.rows.print(cells)
}

// printTable prints the initial pods as "tug pods" does, and takes the
// column widths of the rows that follow from its header.
func (pw *podWatcher) printTable(ctx context.Context) error {
	pw.synced = true
	manifests, err := pw.client.Manifests(ctx)
	if err != nil {
		return err
	}
	pw.setFiles(manifests)
	var buf bytes.Buffer
	n := writePodTable(&buf, pw.initial, manifests, pw.opts, pw.now())
	header, _, _ := strings.Cut(buf.String(), "\n")
	pw.namespace = strings.HasPrefix(header, "NAMESPACE")
	if n == 0 {
		if pw.opts.namespace != "" {
			fmt.Fprintf(pw.stderr, "No pods in namespace %q.\n", pw.opts.namespace)
		} else {
			fmt.Fprintln(pw.stderr, "No pods.")
		}
	}
	titles := pw.titles()
	pw.rows = rowPrinter{w: pw.out, widths: widthsFromHeader(header, titles)}
	if buf.Len() == 0 {
		// No table yet: the first row comes with the header.
		pw.rows.pending = titles
	}
	if _, err := pw.out.Write(buf.Bytes()); err != nil {
		return err
	}
	now := pw.now()
	for i := range pw.initial {
		v := &pw.initial[i]
		pw.printed[v.Metadata.UID] = rowKey(pw.cells(v, now), pw.namespace)
	}
	pw.initial = nil
	return nil
}

// readFiles refreshes which manifest file each pod comes from (-o wide's
// FILE); when the agent cannot say, FILE stays <none>.
func (pw *podWatcher) readFiles(ctx context.Context) {
	if manifests, err := pw.client.Manifests(ctx); err == nil {
		pw.setFiles(manifests)
	}
}

func (pw *podWatcher) setFiles(manifests []podview.ManifestStatus) {
	pw.files = map[string]string{}
	for _, m := range manifests {
		for _, uid := range m.UIDs {
			pw.files[uid] = m.File
		}
	}
}

// titles are the table's column titles.
func (pw *podWatcher) titles() []string { return tableTitles(pw.namespace, pw.opts.wide) }

// cells is v's row of the pod table at now, the cells writePodTable prints
// for it (unescaped).
func (pw *podWatcher) cells(v *podview.View, now time.Time) []string {
	return podCells(v, pw.files[v.Metadata.UID], pw.namespace, pw.opts.wide, now)
}

// rowKey is what of a row counts as a change: every cell but AGE, and of
// RESTARTS the count without "(5s ago)", which move with the clock alone.
func rowKey(cells []string, namespace bool) string {
	age := 4 // NAME READY STATUS RESTARTS AGE
	if namespace {
		age++
	}
	key := make([]string, 0, len(cells))
	for i, c := range cells {
		switch i {
		case age:
			continue
		case age - 1:
			c, _, _ = strings.Cut(c, " ")
		}
		key = append(key, c)
	}
	return strings.Join(key, "\x00")
}

// widthsFromHeader returns the widths of the columns of a table whose
// header line is header, the columns titled titles in that order (a title
// holds no space): the distance from each title to the next. It returns nil
// when header is not such a line.
func widthsFromHeader(header string, titles []string) []int {
	var starts []int
	from := 0
	for _, t := range titles {
		i := strings.Index(header[from:], t)
		if i < 0 {
			return nil
		}
		starts = append(starts, utf8.RuneCountInString(header[:from+i]))
		from += i + len(t)
	}
	widths := make([]int, 0, len(starts))
	for i := 1; i < len(starts); i++ {
		widths = append(widths, starts[i]-starts[i-1])
	}
	return widths
}

// rowPrinter prints table rows one at a time, each cell padded to its
// column's width, which grows to fit a longer cell and three spaces (and
// then stays, so that later rows line up; kubectl's printer remembers
// widths the same way).
type rowPrinter struct {
	w       io.Writer
	widths  []int
	pending []string // a header to print before the first row
}

func (p *rowPrinter) print(cells []string) error {
	for i := range cells {
		cells[i] = escape(cells[i])
	}
	var b strings.Builder
	if p.pending != nil {
		p.grow(p.pending)
		p.grow(cells)
		p.line(&b, p.pending)
		p.pending = nil
	}
	p.grow(cells)
	p.line(&b, cells)
	_, err := io.WriteString(p.w, b.String())
	return err
}

// grow widens the columns to fit cells (the last one, never padded, aside).
func (p *rowPrinter) grow(cells []string) {
	for i, c := range cells[:max(len(cells)-1, 0)] {
		if i == len(p.widths) {
			p.widths = append(p.widths, 0)
		}
		p.widths[i] = max(p.widths[i], utf8.RuneCountInString(c)+3)
	}
}

// line writes cells padded to the widths grow has made room for.
func (p *rowPrinter) line(b *strings.Builder, cells []string) {
	for i, c := range cells {
		b.WriteString(c)
		if i < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", p.widths[i]-utf8.RuneCountInString(c)))
		}
	}
	b.WriteByte('\n')
}
