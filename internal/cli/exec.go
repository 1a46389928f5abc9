package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"tug/internal/api"
	"tug/internal/cli/cmdflag"
)

const execUsage = `usage: tug exec [-c CONTAINER] [-n NAMESPACE] [-i] [-t] [--socket PATH] POD -- COMMAND [ARG...]

Runs COMMAND in a running container of POD, as "kubectl exec" does: as the
container's own process (its user, environment and working directory), its
stdout and stderr on tug's. Without -c, the pod's default container (its
"kubectl.kubernetes.io/default-container" annotation's, or its first; with
several, which one is said on stderr). -i forwards tug's stdin to COMMAND;
-t (with -i, from a terminal) gives COMMAND a terminal: tug's own is put in
raw mode until COMMAND exits, and its size follows tug's. tug exec exits
with COMMAND's exit code (126 or 127 when COMMAND cannot be run or is not
found), 1 when tug cannot run it, 2 for a usage error.

`

// execArgs are the parsed arguments of "tug exec".
type execArgs struct {
	socket, namespace, pod, container string
	stdin, tty                        bool
	command                           []string
}

// parseExecArgs parses the arguments of "tug exec": flags and POD in any
// order before "--", COMMAND and its arguments after it. ok is false when
// the command must stop, with code its exit code (parseFlags's).
func parseExecArgs(args []string, defaultSocket string, stdout, stderr io.Writer) (a execArgs, code int, ok bool) {
	fs := cmdflag.New("exec")
	socket, ns := podFlags(fs, defaultSocket)
	fs.StringVarP(&a.container, "container", "c", "", "the `container` (default: the default-container annotation's, or the first)")
	fs.BoolVarP(&a.stdin, "stdin", "i", false, "forward stdin to the command")
	fs.BoolVarP(&a.tty, "tty", "t", false, "give the command a terminal (with -i, from a terminal)")
	flags := args
	dash := slices.Index(args, "--")
	if dash >= 0 {
		flags, a.command = args[:dash], args[dash+1:]
	}
	pos, code, ok := cmdflag.Parse(fs, flags, execUsage, stdout, stderr)
	if !ok {
		return a, code, false
	}
	a.socket, a.namespace = *socket, *ns
	switch {
	case len(pos) == 0:
		return a, cmdflag.UsageError(stderr, execUsage, "tug exec takes a pod name"), false
	case len(pos) > 1 && dash < 0:
		return a, cmdflag.UsageError(stderr, execUsage, "the command goes after --: tug exec "+pos[0]+" -- "+strings.Join(pos[1:], " ")), false
	case len(pos) > 1:
		return a, cmdflag.UsageError(stderr, execUsage, "tug exec takes one pod name"), false
	case len(a.command) == 0 || a.command[0] == "":
		return a, cmdflag.UsageError(stderr, execUsage, "no command: give it after --"), false
	}
	a.pod = pos[0]
	return a, 0, true
}

// execCmd is "tug exec". It returns the command's exit code, 1 when tug
// cannot run it, 2 for a usage error.
func (e Env) execCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a, code, ok := parseExecArgs(args, e.Socket, stdout, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	c := &api.Client{SocketPath: a.socket}
	if a.container == "" {
		v, err := c.Pod(ctx, a.namespace, a.pod)
		if err != nil {
			fmt.Fprintln(stderr, "tug:", err)
			return 1
		}
		a.container = defaultContainer(v, stderr)
	}
	o := api.ExecOptions{Container: a.container, Command: a.command, Stdout: stdout, Stderr: stderr}
	if a.stdin {
		o.Stdin = e.Stdin
		if o.Stdin == nil {
			o.Stdin = strings.NewReader("")
		}
	}
	if a.tty {
		term, ok := terminalOf(o.Stdin)
		switch {
		case !a.stdin:
			fmt.Fprintln(stderr, "Unable to use a TTY: -t needs -i")
		case !ok:
			fmt.Fprintln(stderr, "Unable to use a TTY - input is not a terminal or the right kind of file")
		default:
			restore, err := makeRaw(term)
			if err != nil {
				fmt.Fprintln(stderr, "tug:", err)
				return 1
			}
			defer restore()
			o.TTY = true
			o.Size = terminalSize(term)
			resize := make(chan api.TerminalSize, 1)
			winch := make(chan os.Signal, 1)
			signal.Notify(winch, syscall.SIGWINCH)
			defer signal.Stop(winch)
			go forwardResizes(ctx, term, winch, resize)
			o.Resize = resize
		}
	}
	st, err := c.Exec(ctx, a.namespace, a.pod, o)
	switch {
	case err != nil && ctx.Err() != nil:
		return 1
	case err != nil:
		fmt.Fprintln(stderr, "tug:", err)
		return 1
	case st.Error != "":
		fmt.Fprintln(stderr, "tug:", st.Error)
		if st.Code != 0 {
			return st.Code
		}
		return 1
	}
	return st.Code
}

// terminalOf returns the file descriptor of in when in is a terminal.
func terminalOf(in io.Reader) (int, bool) {
	f, ok := in.(interface{ Fd() uintptr })
	if !ok {
		return 0, false
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return 0, false
	}
	return fd, true
}

// makeRaw puts terminal fd in raw mode, as cfmakeraw(3) does, and returns
// what restores its settings.
func makeRaw(fd int) (restore func(), err error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("read the terminal's settings: %w", err)
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// terminalSize is the size of terminal fd (zero when it cannot be read).
func terminalSize(fd int) api.TerminalSize {
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil {
		return api.TerminalSize{}
	}
	return api.TerminalSize{Width: ws.Col, Height: ws.Row}
}

// forwardResizes sends terminal fd's size on out at each SIGWINCH until
// ctx ends, dropping a size the exec has not taken yet for the newer one.
func forwardResizes(ctx context.Context, fd int, winch <-chan os.Signal, out chan api.TerminalSize) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-winch:
		}
		size := terminalSize(fd)
		select {
		case <-out: // not sent yet: replaced
		default:
		}
		out <- size
	}
}
