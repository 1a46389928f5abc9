package api

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"
)

func TestFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		stream  Stream
		payload []byte
	}{
		{"empty close-stdin", StreamCloseStdin, nil},
		{"stdout text", StreamStdout, []byte("out\n")},
		{"resize", StreamResize, []byte(`{"width":80,"height":24}`)},
		{"largest payload", StreamStdin, bytes.Repeat([]byte{0xff}, MaxFramePayload)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteFrame(&buf, tt.stream, tt.payload); err != nil {
				t.Fatal(err)
			}
			if got, want := buf.Len(), frameHeaderLen+len(tt.payload); got != want {
				t.Fatalf("frame is %d bytes, want %d", got, want)
			}
			// One byte per Read: the reader must not depend on whole frames
			// arriving at once.
			s, p, err := ReadFrame(iotest.OneByteReader(&buf))
			if err != nil {
				t.Fatal(err)
			}
			if s != tt.stream || !bytes.Equal(p, tt.payload) {
				t.Errorf("read stream %d, %d bytes; want stream %d, %d bytes", s, len(p), tt.stream, len(tt.payload))
			}
			if _, _, err := ReadFrame(&buf); err != io.EOF {
				t.Errorf("after the only frame: %v, want io.EOF", err)
			}
		})
	}
}

func TestReadFrameErrors(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  error
	}{
		{"nothing", nil, io.EOF},
		{"short header", []byte{1, 0, 0}, io.ErrUnexpectedEOF},
		{"short payload", []byte{1, 0, 0, 0, 4, 'a', 'b'}, io.ErrUnexpectedEOF},
		{"header only", []byte{1, 0, 0, 0, 1}, io.ErrUnexpectedEOF},
		{"one byte over the limit", []byte{0, 0, 1, 0, 1}, ErrFrameTooLarge},
		{"4 GiB announced", []byte{2, 0xff, 0xff, 0xff, 0xff}, ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadFrame(iotest.HalfReader(bytes.NewReader(tt.input)))
			if !errors.Is(err, tt.want) {
				t.Errorf("ReadFrame: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestWriteFrameRefusesOversize(t *testing.T) {
	var buf bytes.Buffer
	err := WriteFrame(&buf, StreamStdout, make([]byte, MaxFramePayload+1))
	if !errors.Is(err, ErrFrameTooLarge) || buf.Len() != 0 {
		t.Errorf("WriteFrame of an oversize payload: %v, wrote %d bytes", err, buf.Len())
	}
}

func TestFrameWriterCutsLongWrites(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		frames []int
	}{
		{"small", 10, []int{10}},
		{"exactly the limit", MaxFramePayload, []int{MaxFramePayload}},
		{"over the limit", 2*MaxFramePayload + 3, []int{MaxFramePayload, MaxFramePayload, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			w := frameWriter{stream: StreamStderr, send: func(s Stream, p []byte) error {
				if s != StreamStderr {
					t.Errorf("stream %d, want stderr", s)
				}
				got = append(got, len(p))
				return nil
			}}
			n, err := w.Write(make([]byte, tt.n))
			if err != nil || n != tt.n {
				t.Fatalf("Write: %d, %v", n, err)
			}
			if !slices.Equal(got, tt.frames) {
				t.Errorf("frames of %v bytes, want %v", got, tt.frames)
			}
		})
	}
}
