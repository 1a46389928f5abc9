package podlogs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"tug/internal/pod"
)

// The "binary" log driver: the shim starts "<LoggerPath> logger <settings>" when the task is
// created, with the container's stdout on fd 3, its stderr on fd 4 and a
// pipe on fd 5 that the logger closes once it is ready (the shim waits for
// that before it starts the container). The shim passes the log URI's query
// as "key value" arguments in Go map order, which is random, so all settings
// travel as the single key "logger" whose value is a url.Values encoding.
// The logger is the shim's child, not tug's: a tug crash or restart loses no
// output.

// maxLogLine is the longest log line written whole; longer lines are split
// into partial ("P") records of this size, as containerd's CRI does.
const maxLogLine = 16 * 1024

// loggerDrainTimeout is how long the logger keeps copying after SIGTERM.
// The shim closes the pipes' write ends and then sends SIGTERM when the
// container exits, and kills the logger 12 s later; what is still in the
// pipes must be written before that.
const loggerDrainTimeout = 10 * time.Second

// Log settings keys.
const (
	logSettingPath     = "path"
	logSettingMaxSize  = "max-size"
	logSettingMaxFiles = "max-files"
)

// Prune removes the log files (<attempt>.log and its rotated
// <attempt>.log.N) of the attempts below keepFrom in a container's log
// directory dir, so that a crash-looping container keeps the logs of its
// current and previous attempt only (what "tug logs --previous" reads), not
// one set per restart until the pod is removed. Other files are left alone.
func Prune(dir string, keepFrom int) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if a, ok := logAttempt(e.Name()); ok && a < keepFrom && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// logAttempt returns the attempt of a log file name: "<attempt>.log" or
// "<attempt>.log.<n>".
func logAttempt(name string) (int, bool) {
	num, rest, ok := strings.Cut(name, ".log")
	if !ok || (rest != "" && (rest[0] != '.' || !allDigits(rest[1:]))) || !allDigits(num) {
		return 0, false
	}
	a, err := strconv.Atoi(num)
	return a, err == nil
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// PodDir is the log directory of pod p: <logsDir>/<namespace>_<pod>_<uid>.
func PodDir(logsDir string, p *pod.Pod) string { return podDir(logsDir, p.Metadata) }

// ContainerDir is the log directory of a container of the pod m names:
// <logsDir>/<namespace>_<pod>_<uid>/<container>.
func ContainerDir(logsDir string, m pod.ObjectMeta, container string) string {
	return filepath.Join(podDir(logsDir, m), container)
}

func podDir(logsDir string, m pod.ObjectMeta) string {
	return filepath.Join(logsDir, m.Namespace+"_"+m.Name+"_"+m.UID)
}

// ContainerPath is the CRI log file of one attempt of a container:
// <logsDir>/<namespace>_<pod>_<uid>/<container>/<attempt>.log.
func ContainerPath(logsDir string, p *pod.Pod, container string, attempt int) string {
	return filepath.Join(PodDir(logsDir, p), container, strconv.Itoa(attempt)+".log")
}

// Settings encodes the logger's settings (RunLogger) for the CRI log file
// path: rotated beyond maxSize bytes (0: never), maxFiles files kept, the
// current one included.
func Settings(path string, maxSize int64, maxFiles int) string {
	return url.Values{
		logSettingPath:    {path},
		logSettingMaxSize: {strconv.FormatInt(maxSize, 10)},
		// The logger's max-files counts the rotated files only.
		logSettingMaxFiles: {strconv.Itoa(max(maxFiles-1, 0))},
	}.Encode()
}

// logConfig is the parsed logger settings.
type logConfig struct {
	path     string
	maxSize  int64 // 0: never rotate
	maxFiles int   // rotated files kept (the current one not counted)
	// rawLimit is the file driver's raw file length at which the shim
	// stops writing (rawlimit.go); 0: the shim is not limited and the raw
	// files are not collapsed.
	rawLimit int64
	// journal, if not nil, receives each converted line as a journal
	// entry (the file driver's converter only); noFile leaves the CRI
	// file unwritten (journald alone).
	journal JournalSender
	noFile  bool
}

func parseLogSettings(settings string) (logConfig, error) {
	v, err := url.ParseQuery(settings)
	if err != nil {
		return logConfig{}, fmt.Errorf("logger settings: %w", err)
	}
	cfg := logConfig{path: v.Get(logSettingPath)}
	if !filepath.IsAbs(cfg.path) {
		return logConfig{}, fmt.Errorf("logger settings: path %q is not absolute", cfg.path)
	}
	if s := v.Get(logSettingMaxSize); s != "" {
		if cfg.maxSize, err = strconv.ParseInt(s, 10, 64); err != nil || cfg.maxSize < 0 {
			return logConfig{}, fmt.Errorf("logger settings: bad %s %q", logSettingMaxSize, s)
		}
	}
	if s := v.Get(logSettingMaxFiles); s != "" {
		if cfg.maxFiles, err = strconv.Atoi(s); err != nil || cfg.maxFiles < 0 {
			return logConfig{}, fmt.Errorf("logger settings: bad %s %q", logSettingMaxFiles, s)
		}
	}
	return cfg, nil
}

// RunLogger is the body of "tug logger <settings>", run by the shim for
// each container: it writes the container's stdout and stderr to the log
// file named in settings (a url.Values encoding with path, max-size and
// max-files) in the CRI format, one record per line:
//
//	<RFC3339Nano time> <stdout|stderr> <F|P> <text>
//
// A line longer than 16 KiB is split into P (partial) records ended by an F
// record; a last line without a newline is written as F when its stream
// ends; a trailing "\r" is dropped with the newline. The two streams are
// copied concurrently and their records are never interleaved. When the
// file would grow beyond max-size it is rotated: <attempt>.log becomes
// <attempt>.log.1, .1 becomes .2 and so on, and files beyond max-files are
// removed.
//
// RunLogger creates the directories (0755) and the file (0640, appending),
// then closes ready to tell the shim to start the container, and returns
// when both streams have ended. It survives SIGTERM, which the shim sends
// as soon as the container exits, and keeps copying what is left in the
// pipes for up to 10 s. If the file cannot be opened it still closes ready
// and drains the streams, so the container is not killed by a broken pipe,
// and returns the error at the end. The caller passes os.NewFile(3), (4)
// and (5).
func RunLogger(settings string, stdout, stderr io.Reader, ready io.Closer) error {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	defer signal.Stop(term)

	cfg, err := parseLogSettings(settings)
	var w *logWriter
	if err == nil {
		w, err = openLogWriter(cfg)
	}
	if ready != nil {
		ready.Close()
	}
	var sink recordSink = discardSink{}
	if w != nil {
		defer w.close()
		sink = w
	}

	done := make(chan error, 2)
	go func() { done <- copyLog(sink, "stdout", stdout) }()
	go func() { done <- copyLog(sink, "stderr", stderr) }()
	var errs []error
	var timeout <-chan time.Time
	for pending := 2; pending > 0; {
		select {
		case e := <-done:
			pending--
			if e != nil {
				errs = append(errs, e)
			}
		case <-term:
			if timeout == nil {
				timeout = time.After(loggerDrainTimeout)
			}
		case <-timeout:
			errs = append(errs, errors.New("logger: streams still open after SIGTERM, giving up"))
			pending = 0
		}
	}
	if err != nil {
		errs = append([]error{err}, errs...)
	}
	return errors.Join(errs...)
}

// recordSink receives log records.
type recordSink interface {
	write(stream string, partial bool, text []byte) error
}

type discardSink struct{}

func (discardSink) write(string, bool, []byte) error { return nil }

// copyLog reads lines from r and hands them to sink until r ends. A failed
// write does not stop the copy (the next line is tried again, and the
// container never blocks on a full pipe); the first write error is returned
// when r ends.
func copyLog(sink recordSink, stream string, r io.Reader) error {
	if r == nil {
		return nil
	}
	br := bufio.NewReaderSize(r, maxLogLine)
	var werr error
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || (err == nil && !isPrefix) {
			if e := sink.write(stream, isPrefix, line); e != nil && werr == nil {
				werr = e
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
				return werr
			}
			return errors.Join(werr, fmt.Errorf("read %s: %w", stream, err))
		}
	}
}

// logWriter writes CRI records to a size-rotated file. Safe for concurrent
// use.
type logWriter struct {
	cfg  logConfig
	mu   sync.Mutex
	f    *os.File
	size int64
	buf  []byte
}

func openLogWriter(cfg logConfig) (*logWriter, error) {
	if err := os.MkdirAll(filepath.Dir(cfg.path), 0o755); err != nil {
		return nil, fmt.Errorf("logger: %w", err)
	}
	w := &logWriter{cfg: cfg}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *logWriter) open() error {
	f, err := os.OpenFile(w.cfg.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("logger: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("logger: %w", err)
	}
	w.f, w.size = f, fi.Size()
	return nil
}

func (w *logWriter) write(stream string, partial bool, text []byte) error {
	tag := "F"
	if partial {
		tag = "P"
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = time.Now().AppendFormat(w.buf[:0], time.RFC3339Nano)
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, stream...)
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, tag...)
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, text...)
	w.buf = append(w.buf, '\n')
	if w.cfg.maxSize > 0 && w.size > 0 && w.size+int64(len(w.buf)) > w.cfg.maxSize {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	n, err := w.f.Write(w.buf)
	w.size += int64(n)
	if err != nil {
		return fmt.Errorf("logger: %w", err)
	}
	return nil
}

// rotate shifts path.N to path.N+1 (dropping what would pass maxFiles),
// moves path to path.1 and starts a new path. With maxFiles 0 the file is
// truncated instead. The file is reopened even when a rename fails.
func (w *logWriter) rotate() error {
	w.f.Close()
	err := w.shift()
	if oerr := w.open(); oerr != nil {
		return errors.Join(err, oerr)
	}
	if err != nil {
		return fmt.Errorf("logger: rotate: %w", err)
	}
	return nil
}

func (w *logWriter) shift() error {
	p := w.cfg.path
	if w.cfg.maxFiles == 0 {
		return os.Truncate(p, 0)
	}
	os.Remove(p + "." + strconv.Itoa(w.cfg.maxFiles))
	for i := w.cfg.maxFiles - 1; i >= 1; i-- {
		from := p + "." + strconv.Itoa(i)
		if err := os.Rename(from, p+"."+strconv.Itoa(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return os.Rename(p, p+".1")
}

func (w *logWriter) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}
