package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gopkg.in/yaml.v3"

	"tug/internal/api"
	"tug/internal/cli/cmdflag"
	"tug/internal/fieldpath"
	"tug/internal/pod"
	"tug/internal/podview"
	"tug/internal/source"
)

// "tug pods" and "tug inspect" read the agent's API over its unix socket
// (api.Client) and print what it says; the flag parsing and printing
// helpers below are every command's.

const podsUsage = `usage: tug pods [-w] [-o wide|json|yaml|name] [--no-headers] [-n NAMESPACE | -A] [--socket PATH]

Lists the pods tug runs like "kubectl get pods" (NAME, READY, STATUS,
RESTARTS, AGE; -o wide adds IP and FILE), every namespace unless -n is given
(with a NAMESPACE column when some pod is outside "default"), then each
manifest file tug cannot use, as a ManifestError row and, below the table,
its errors as file:line:col lines. With -w, then prints a pod's row again
each time it changes (AGE aside), a pod appears or goes away, until
interrupted (-o json: each pod as a JSON line, at every change).

`

const inspectUsage = `usage: tug inspect [-n NAMESPACE] [-o yaml|json|wide|name] [--no-headers] [--socket PATH] POD

Prints one pod, its spec and its status, as YAML (or JSON), with its most
recent event (lastEvent; "tug events POD" lists them all); -o wide prints
its row of "tug pods -o wide". POD is the name "tug pods" shows, or the
name written in the manifest.

`

// listPods is "tug pods". It returns the exit code: 1 when tug cannot be
// asked, 2 for a usage error.
func (e Env) listPods(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("pods")
	socket := fs.String("socket", e.Socket, "`path` of tug's API socket")
	ns := fs.StringP("namespace", "n", "", "list only the pods of this `namespace`")
	all := allNamespacesFlag(fs)
	out := outputFlags(fs, formatTable)
	watch := fs.BoolP("watch", "w", false, "after listing, print a row each time a pod changes")
	pos, code, ok := cmdflag.Parse(fs, args, podsUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return cmdflag.UsageError(stderr, podsUsage, "tug pods takes no arguments (use tug inspect POD or tug describe POD for one pod)")
	}
	if err := out.check(); err != nil {
		return cmdflag.UsageError(stderr, podsUsage, err.Error())
	}
	if *all {
		*ns = ""
	}

	c := &api.Client{SocketPath: *socket}
	if *watch {
		if out.format == formatYAML || out.format == formatName {
			return cmdflag.UsageError(stderr, podsUsage, "tug pods -w prints a table or JSON lines, not "+out.format)
		}
		return watchPods(ctx, c, tableOptions{wide: out.format == formatWide, namespace: *ns, noHeaders: out.noHeaders}, out.format == formatJSON, stdout, stderr)
	}
	list, err := c.Pods(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	every := slices.Clone(list.Items)
	if *ns != "" {
		list.Items = slices.DeleteFunc(list.Items, func(v podview.View) bool { return v.Metadata.Namespace != *ns })
	}
	switch out.format {
	case formatJSON:
		err = writeJSON(stdout, list)
	case formatYAML:
		err = writeYAML(stdout, list)
	case formatName:
		err = writePodNames(stdout, list.Items)
	default:
		var manifests []podview.ManifestStatus
		if manifests, err = c.Manifests(ctx); err != nil {
			fmt.Fprintln(stderr, "tug:", err)
			return 1
		}
		opts := tableOptions{wide: out.format == formatWide, namespace: *ns, noHeaders: out.noHeaders}
		if writePodTable(stdout, every, manifests, opts, time.Now()) == 0 {
			if *ns != "" {
				fmt.Fprintf(stderr, "No pods in namespace %q.\n", *ns)
			} else {
				fmt.Fprintln(stderr, "No pods.")
			}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	return 0
}

// writePodNames prints "pod/NAME" for each pod, as kubectl's -o name.
func writePodNames(w io.Writer, pods []podview.View) error {
	var b strings.Builder
	for _, v := range pods {
		b.WriteString("pod/" + v.Metadata.Name + "\n")
	}
	return writeEscaped(w, b.String())
}

// inspectPod is "tug inspect POD". It returns the exit code: 1 when tug
// cannot be asked or has no such pod, 2 for a usage error.
func (e Env) inspectPod(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := cmdflag.New("inspect")
	socket, ns := podFlags(fs, e.Socket)
	out := outputFlags(fs, formatYAML)
	pos, code, ok := cmdflag.Parse(fs, args, inspectUsage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return cmdflag.UsageError(stderr, inspectUsage, "tug inspect takes one pod name")
	}
	if err := out.check(); err != nil {
		return cmdflag.UsageError(stderr, inspectUsage, err.Error())
	}
	client := &api.Client{SocketPath: *socket}
	v, err := client.Pod(ctx, *ns, pos[0])
	if err == nil {
		switch out.format {
		case formatJSON:
			err = writeJSON(stdout, withLastEvent(ctx, client, v))
		case formatName:
			err = writePodNames(stdout, []podview.View{v})
		case formatTable, formatWide:
			opts := tableOptions{wide: out.format == formatWide, namespace: v.Metadata.Namespace, noHeaders: out.noHeaders}
			writePodTable(stdout, []podview.View{v}, nil, opts, time.Now())
		default:
			err = writeYAML(stdout, withLastEvent(ctx, client, v))
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	}
	return 0
}

// tableOptions chooses the rows and columns of the pod table.
type tableOptions struct {
	wide      bool   // add IP and FILE
	noHeaders bool   // no header row
	namespace string // only this namespace's pods; "" for all, with a NAMESPACE column unless all are in "default"
}

// manifestErrorStatus is the STATUS of a manifest file tug cannot use.
const manifestErrorStatus = "ManifestError"

// PrintPods prints pods and broken manifests as "tug pods" does by default
// (writePodTable, every namespace), and returns the number of rows. "tug
// run --runonce" uses it too. It does not modify its arguments.
func PrintPods(w io.Writer, pods []podview.View, manifests []podview.ManifestStatus, now time.Time) int {
	return writePodTable(w, pods, manifests, tableOptions{}, now)
}

// writePodTable prints pods (those of opts.namespace, when set) as "kubectl
// get pods" does, sorted by namespace and name, with READY, STATUS, RESTARTS and AGE from api.Summarize at now;
// then a ManifestError row for each manifest file with an error and, after
// the table, every error line of those files. It prints nothing when there
// is no row, and returns the number of rows. It does not modify its
// arguments.
func writePodTable(w io.Writer, pods []podview.View, manifests []podview.ManifestStatus, opts tableOptions, now time.Time) int {
	nameOf := make(map[string]string) // pod UID -> its name, in any namespace
	for _, v := range pods {
		nameOf[v.Metadata.UID] = v.Metadata.Name
	}
	pods = slices.DeleteFunc(slices.Clone(pods), func(v podview.View) bool {
		return opts.namespace != "" && v.Metadata.Namespace != opts.namespace
	})
	namespaceColumn := opts.namespace == "" && !allDefault(pods)
	slices.SortFunc(pods, func(a, b podview.View) int {
		return cmp.Or(cmp.Compare(a.Metadata.Namespace, b.Metadata.Namespace), cmp.Compare(a.Metadata.Name, b.Metadata.Name))
	})
	var broken []podview.ManifestStatus
	for _, m := range manifests {
		if m.Error != "" {
			broken = append(broken, m)
		}
	}
	slices.SortFunc(broken, func(a, b podview.ManifestStatus) int { return cmp.Compare(a.File, b.File) })
	var urls []podview.ManifestStatus
	for _, m := range manifests {
		if m.Fetch != nil {
			urls = append(urls, m)
		}
	}
	if len(pods)+len(broken)+len(urls) == 0 && !slices.ContainsFunc(manifests, func(m podview.ManifestStatus) bool { return m.UpdateWaiting != nil }) {
		return 0
	}

	fileOf := make(map[string]string) // pod UID -> its manifest file
	for _, m := range manifests {
		for _, uid := range m.UIDs {
			fileOf[uid] = m.File
		}
	}

	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	printRow := func(cells []string) {
		for i := range cells {
			cells[i] = escape(cells[i])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	row := func(ns string, cells []string, ip, file string) {
		printRow(tableRow(namespaceColumn, opts.wide, ns, cells, ip, file))
	}
	if !opts.noHeaders {
		printRow(tableTitles(namespaceColumn, opts.wide))
	}
	for i := range pods {
		v := &pods[i]
		printRow(podCells(v, fileOf[v.Metadata.UID], namespaceColumn, opts.wide, now))
	}
	for _, m := range broken {
		age := "<unknown>"
		if !m.LastChange.IsZero() {
			age = api.HumanDuration(now.Sub(m.LastChange))
		}
		row("-", []string{filepath.Base(m.File), "-", manifestErrorStatus, "-", age}, "<none>", m.File)
	}
	tw.Flush()

	// Why a pod cannot be set up (no free address, a missing hostPath):
	// what kubectl describe shows as the pod's events.
	first := true
	for i := range pods {
		v := &pods[i]
		for _, note := range podNotes(&v.Status) {
			if first {
				fmt.Fprintln(w)
				first = false
			}
			fmt.Fprintln(w, escape(v.Metadata.Name+": "+note))
		}
	}
	for i, m := range broken {
		if i == 0 {
			fmt.Fprintln(w)
		}
		for line := range strings.Lines(m.Error) {
			line = strings.TrimRight(line, "\n")
			if line == "" {
				continue
			}
			if !strings.HasPrefix(line, m.File) {
				line = m.File + ": " + line
			}
			fmt.Fprintln(w, escape(line))
		}
		if len(m.UIDs) > 0 {
			var names []string
			for _, uid := range m.UIDs {
				names = append(names, cmp.Or(nameOf[uid], uid))
			}
			fmt.Fprintln(w, escape(fmt.Sprintf("%s: keeping its last good version running (%s)", m.File, strings.Join(names, ", "))))
		}
	}
	if len(urls) > 0 {
		fmt.Fprintln(w)
	}
	for _, m := range urls {
		fmt.Fprintln(w, escape(fetchLine(m, now)))
	}
	var waiting []podview.ManifestStatus
	for _, m := range manifests {
		if m.UpdateWaiting != nil || (m.Wave != nil && m.Wave.State != "waiting" && m.Wave.State != "applied") {
			waiting = append(waiting, m)
		}
	}
	slices.SortFunc(waiting, func(a, b podview.ManifestStatus) int { return cmp.Compare(a.File, b.File) })
	for i, m := range waiting {
		if i == 0 {
			fmt.Fprintln(w)
		}
		if m.UpdateWaiting != nil {
			fmt.Fprintln(w, escape(m.File+": "+UpdateWaitingText(m.UpdateWaiting, now)))
		}
		if m.Wave != nil && m.Wave.State != "waiting" && m.Wave.State != "applied" {
			fmt.Fprintln(w, escape(m.File+": "+WaveText(m.Wave)))
		}
	}
	return len(pods) + len(broken)
}

// WaveText says where a source is in a bundle rollout: "rollout halted:
// version 7 halted by version 8 before it was applied here: keeping
// version 6".
func WaveText(s *podview.WaveState) string {
	text := "rollout " + strings.ReplaceAll(s.State, "_", " ")
	if s.Reason != "" {
		text += ": " + s.Reason
	}
	return text
}

// UpdateWaitingText says what an update held for its window waits for:
// "update waiting for the window at 2026-11-30 02:00:00 CET (version 7,
// images pulled)", the opening in now's location.
func UpdateWaitingText(u *podview.UpdateWaiting, now time.Time) string {
	text := "update waiting for the window at " + u.Opens.In(now.Location()).Format("2006-01-02 15:04:05 MST")
	switch {
	case u.WaveIndex > 0 && u.WaveOpens.After(now):
		text = fmt.Sprintf("update waiting for wave %d %q at %s", u.WaveIndex, u.Wave, u.WaveOpens.In(now.Location()).Format("2006-01-02 15:04:05 MST"))
		if !u.Opens.Equal(u.WaveOpens) && !u.Opens.IsZero() {
			text += ", then for the window at " + u.Opens.In(now.Location()).Format("2006-01-02 15:04:05 MST")
		}
	case u.Opens.IsZero():
		text = "update waiting for the window " + strconv.Quote(u.Window) + ", which never opens"
	case u.WaveIndex > 0:
		text += fmt.Sprintf(" (wave %d %q open)", u.WaveIndex, u.Wave)
	}
	var notes []string
	if u.Version != 0 {
		notes = append(notes, "version "+strconv.FormatUint(u.Version, 10))
	}
	if u.Hash == "" {
		notes = append(notes, "file removed")
	}
	if u.Prefetched {
		notes = append(notes, "images pulled")
	}
	if len(notes) > 0 {
		text += " (" + strings.Join(notes, ", ") + ")"
	}
	return text
}

// podNotes are the lines "tug pods" prints about a pod below the table:
// why it cannot be set up (its status message), what an update of it
// waits on (its False UpdateReady condition), which of its devices are
// gone (its False DevicesReady condition), and the progress of the
// pulls its containers wait on.
func podNotes(st *pod.Status) []string {
	var notes []string
	if st.Message != "" {
		notes = append(notes, st.Message)
	}
	for _, c := range st.Conditions {
		if (c.Type == pod.ConditionUpdateReady || c.Type == pod.ConditionDevicesReady) && c.Status == "False" && c.Message != "" {
			notes = append(notes, c.Message)
		}
	}
	for _, cs := range slices.Concat(st.InitContainerStatuses, st.ContainerStatuses) {
		if w := cs.State.Waiting; w != nil && w.Reason == pod.ReasonContainerCreating && strings.HasPrefix(w.Message, "Pulling image") {
			notes = append(notes, cs.Name+": "+w.Message)
		}
	}
	return notes
}

// tableRow lays out a row of the pod table: ns first with a NAMESPACE
// column, ip and file last when wide.
func tableRow(namespaceColumn, wide bool, ns string, cells []string, ip, file string) []string {
	if namespaceColumn {
		cells = append([]string{ns}, cells...)
	}
	if wide {
		cells = append(cells, ip, file)
	}
	return cells
}

// tableTitles are the pod table's column titles.
func tableTitles(namespaceColumn, wide bool) []string {
	return tableRow(namespaceColumn, wide, "NAMESPACE", []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, "IP", "FILE")
}

// podCells is v's row of the pod table at now, unescaped: its READY,
// STATUS (Terminating from its deletionTimestamp), RESTARTS and AGE from
// api.Summarize, and file, the manifest file it comes from.
func podCells(v *podview.View, file string, namespaceColumn, wide bool, now time.Time) []string {
	s := api.Summarize(v, false, now)
	return tableRow(namespaceColumn, wide, v.Metadata.Namespace,
		[]string{v.Metadata.Name, s.Ready, s.Status, s.Restarts, s.Age}, podIP(&v.Status), orNone(file))
}

// fetchLine sums up a URL or OCI source's state in one line: when it was
// last fetched and with what answer, the accepted content's ETag (URL) or
// artifact digest (OCI) and how old the checkpoint is, e.g. "URL
// https://h/pods.yaml: fetched 3s ago (304), etag "v2", applied
// 462c4323c07e, checkpoint 5m old", or "OCI r.example/tug/b:prod: checked
// 20s ago, digest sha256:9f86d081884c, version 3, ...".
func fetchLine(m podview.ManifestStatus, now time.Time) string {
	f := m.Fetch
	ago := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return api.HumanDuration(now.Sub(t)) + " ago"
	}
	label, name := "URL ", m.Source
	var parts []string
	if ref, ok := strings.CutPrefix(m.Source, source.OCIPrefix); ok {
		label, name = "OCI ", ref
		parts = append(parts, "checked "+ago(f.LastFetch))
		if f.Digest != "" {
			parts = append(parts, "digest "+f.Digest[:min(len("sha256:")+12, len(f.Digest))])
		}
		if m.Version != 0 {
			parts = append(parts, "version "+strconv.FormatUint(m.Version, 10))
		}
	} else {
		answer := "no answer"
		if f.HTTPStatus != 0 {
			answer = strconv.Itoa(f.HTTPStatus)
		}
		parts = append(parts, fmt.Sprintf("fetched %s (%s)", ago(f.LastFetch), answer))
		if f.ETag != "" {
			parts = append(parts, "etag "+f.ETag)
		}
	}
	if m.AppliedHash != "" {
		parts = append(parts, "applied "+m.AppliedHash[:min(12, len(m.AppliedHash))])
	}
	if !f.CheckpointTime.IsZero() {
		parts = append(parts, "checkpoint "+api.HumanDuration(now.Sub(f.CheckpointTime))+" old")
	}
	if f.FromCheckpoint {
		parts = append(parts, "pods from the checkpoint")
	}
	if f.Error != "" {
		parts = append(parts, "error: "+f.Error)
	}
	return label + name + ": " + strings.Join(parts, ", ")
}

// escape is the one place where what tug pods prints from manifests and
// status (names, paths, messages, errors) is made safe for a terminal:
// every non-printable rune (control characters such as ESC, which would
// start a terminal escape sequence, a tab that would shift the table's
// columns, invisible format characters) and every byte that is not UTF-8
// is written as a Go escape (\x1b, \t, \u200b); the rest is left as is
// (fieldpath.Escape, which field paths are built with).
func escape(s string) string { return fieldpath.Escape(s) }

// podIP is the pod's first IP, or "<none>".
func podIP(st *pod.Status) string {
	if len(st.PodIPs) > 0 && st.PodIPs[0].IP != "" {
		return st.PodIPs[0].IP
	}
	return orNone(st.PodIP)
}

func orNone(s string) string { return cmp.Or(s, "<none>") }

// allDefault reports whether every pod is in namespace "default".
func allDefault(pods []podview.View) bool {
	for _, v := range pods {
		if v.Metadata.Namespace != "default" {
			return false
		}
	}
	return true
}

func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return writeEscaped(w, buf.String())
}

// writeEscaped writes text line by line through escape, so that -o json
// and -o yaml show no control or invisible character raw either (JSON and
// YAML put them inside strings, where the escape reads the same).
func writeEscaped(w io.Writer, text string) error {
	var b strings.Builder
	for line := range strings.Lines(text) {
		b.WriteString(escape(strings.TrimSuffix(line, "\n")))
		if strings.HasSuffix(line, "\n") {
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeYAML prints v as YAML with its JSON (Kubernetes) field names: it goes
// through JSON into generic maps first, so keys are sorted as kubectl sorts
// them and omitempty fields stay out.
func writeYAML(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(generic); err != nil {
		return fmt.Errorf("encode YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return writeEscaped(w, buf.String())
}
