package compact

import (
	"errors"
	"fmt"
	"io"
)

// framer splits a watch stream of JSON objects into frames, one object each, without decoding or
// validating them: it tracks only strings and nesting to find where an object ends. The API
// machinery's JSON framer decodes each frame with encoding/json to find its end (a second full
// scan of every watch event); here the frame is read by decodeWatchEvent and decodeObject, and a
// sync decodes the object in full, validating it, when it reads it.
type framer struct{}

func (framer) NewFrameReader(r io.ReadCloser) io.ReadCloser { return &frameReader{r: r} }

func (framer) NewFrameWriter(w io.Writer) io.Writer { return w }

// frameReader returns one JSON object per Read, as runtime.Framer's readers do: when the caller's
// buffer is too small, the part that fits and io.ErrShortBuffer, then the rest on the next Reads.
type frameReader struct {
	r io.ReadCloser
	// buf[start:] is read from r and not yet returned; remaining is the part of the last frame
	// not yet returned, in buf before start
	buf       []byte
	start     int
	remaining []byte
	// the scan of the object at buf[start:], resumed when more bytes arrive
	scanned        int
	depth          int
	inString, skip bool  // in a string; the byte before was its escaping backslash
	err            error // r's error, returned once buf holds no complete object
}

const frameReadSize = 32 << 10

func (f *frameReader) Read(data []byte) (int, error) {
	if len(f.remaining) == 0 {
		frame, err := f.next()
		if err != nil {
			return 0, err
		}
		f.remaining = frame
	}
	n := copy(data, f.remaining)
	if n < len(f.remaining) {
		f.remaining = f.remaining[n:]
		return n, io.ErrShortBuffer
	}
	f.remaining = nil
	return n, nil
}

func (f *frameReader) Close() error { return f.r.Close() }

// next returns the next object of the stream, valid until the next call.
func (f *frameReader) next() ([]byte, error) {
	for {
		end, complete, err := f.scan()
		if err != nil {
			return nil, err
		}
		if complete {
			frame := f.buf[f.start:end]
			f.start, f.scanned = end, 0
			return frame, nil
		}
		if f.err != nil {
			if errors.Is(f.err, io.EOF) && f.start < len(f.buf) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, f.err
		}
		f.fill()
	}
}

// fill reads more of the stream into buf, first moving what is left of it to the front (or into a
// larger buffer when it is mostly full), and keeps r's error for when buf runs out.
func (f *frameReader) fill() {
	left := len(f.buf) - f.start
	if cap(f.buf)-left < frameReadSize/2 {
		grown := make([]byte, left, 2*cap(f.buf)+frameReadSize)
		copy(grown, f.buf[f.start:])
		f.buf = grown
	} else {
		f.buf = f.buf[:copy(f.buf, f.buf[f.start:])]
	}
	f.scanned -= f.start
	f.start = 0
	n, err := f.r.Read(f.buf[len(f.buf):cap(f.buf)])
	f.buf = f.buf[:len(f.buf)+n]
	if err != nil {
		f.err = err
	}
}

var errNotAnObject = errors.New("a watch stream holds JSON objects")

// scan resumes the scan of the object at buf[start:]; it reports where the object ends once buf
// holds all of it. Whitespace before an object is dropped.
func (f *frameReader) scan() (end int, complete bool, err error) {
	if f.scanned <= f.start {
		f.start = skipSpace(f.buf, f.start)
		if f.start == len(f.buf) {
			return 0, false, nil
		}
		if f.buf[f.start] != '{' {
			return 0, false, fmt.Errorf("%w, got %.20q", errNotAnObject, f.buf[f.start:])
		}
		f.scanned, f.depth, f.inString, f.skip = f.start, 0, false, false
	}
	for i := f.scanned; i < len(f.buf); i++ {
		c := f.buf[i]
		switch {
		case f.skip:
			f.skip = false
		case f.inString:
			switch c {
			case '\\':
				f.skip = true
			case '"':
				f.inString = false
			}
		case c == '"':
			f.inString = true
		case c == '{' || c == '[':
			f.depth++
		case c == '}' || c == ']':
			f.depth--
			if f.depth == 0 {
				return i + 1, true, nil
			}
		}
	}
	f.scanned = len(f.buf)
	return 0, false, nil
}
