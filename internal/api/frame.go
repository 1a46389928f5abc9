package api

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Stream identifies the stream a frame of the exec protocol belongs to
// (see the package doc).
type Stream byte

// The streams of the exec protocol. Stdin, Resize and CloseStdin go from
// the client to tug; Stdout, Stderr and Exit from tug to the client.
const (
	StreamStdin      Stream = 0 // bytes for the command's stdin
	StreamStdout     Stream = 1 // bytes the command wrote to stdout (and stderr, with a TTY)
	StreamStderr     Stream = 2 // bytes the command wrote to stderr
	StreamResize     Stream = 3 // JSON TerminalSize: the client's terminal changed size
	StreamCloseStdin Stream = 4 // empty: the client's stdin ended
	StreamExit       Stream = 5 // JSON ExitStatus, the last frame tug sends
)

// MaxFramePayload is the largest payload a frame may carry; a longer frame
// is refused (ErrFrameTooLarge) without its payload being read.
const MaxFramePayload = 64 << 10

// frameHeaderLen is the length of a frame's header: its stream and the
// big-endian length of its payload.
const frameHeaderLen = 5

// ErrFrameTooLarge: a frame's header announces more than MaxFramePayload
// bytes.
var ErrFrameTooLarge = errors.New("api: exec frame too large")

// TerminalSize is the payload of a resize frame.
type TerminalSize struct {
	Width  uint16 `json:"width"`
	Height uint16 `json:"height"`
}

// ExitStatus is the payload of the exit frame: the command's exit code, or
// why it could not be run or waited for (Error set, Code meaningless
// unless the command could not be started: 126 or 127).
type ExitStatus struct {
	Code  int    `json:"code"`
	Error string `json:"error,omitempty"`
}

// WriteFrame writes one frame of stream s carrying p. It writes the header
// and payload in one Write, so that writers sharing w under a lock never
// interleave inside a frame.
func WriteFrame(w io.Writer, s Stream, p []byte) error {
	if len(p) > MaxFramePayload {
		return fmt.Errorf("write frame of %d bytes: %w", len(p), ErrFrameTooLarge)
	}
	buf := make([]byte, frameHeaderLen+len(p))
	buf[0] = byte(s)
	binary.BigEndian.PutUint32(buf[1:frameHeaderLen], uint32(len(p)))
	copy(buf[frameHeaderLen:], p)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame from r, whatever the sizes of r's reads, and
// returns its stream and payload (a new slice). It returns io.EOF when r
// ends between frames, io.ErrUnexpectedEOF when it ends inside one, and
// ErrFrameTooLarge (having read only the header) for a payload over
// MaxFramePayload.
func ReadFrame(r io.Reader) (Stream, []byte, error) {
	var hdr [frameHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxFramePayload {
		return 0, nil, fmt.Errorf("frame of stream %d announces %d bytes: %w", hdr[0], n, ErrFrameTooLarge)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, nil, err
	}
	return Stream(hdr[0]), p, nil
}

// frameWriter is an io.Writer that sends what it is given as frames of one
// stream, cut at MaxFramePayload, through send (which serialises the
// writers of one connection).
type frameWriter struct {
	stream Stream
	send   func(Stream, []byte) error
}

func (f frameWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), MaxFramePayload)
		if err := f.send(f.stream, p[:n]); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}
