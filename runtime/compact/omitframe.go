package compact

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// Omitting an object's body in the cache is not enough when it arrives in a watch stream: the
// stream's decoder reads each frame whole into a buffer that it grows to the largest frame and
// keeps for the life of the watch, and the frame's copy is garbage the collector must catch up
// with. So a protobuf watch stream (the built-in kinds: ConfigMaps, Secrets, where anyone's
// large objects are) is framed by omittingFramer: a frame larger than the cap is reduced as it
// streams past to its event type, the object's type and its metadata, with omittedField set;
// its body is read in small pieces and dropped. The decoder then sees a small frame, and
// protobufItem an object to keep without its body (bodyOmitted).

// omittedField marks, in an object's message, that its body was dropped from the stream: a field
// number no Kubernetes message uses, holding the size of the dropped message.
const omittedField protowire.Number = 536870911 // the largest field number protobuf allows

// omittingFramer frames a protobuf watch stream as protobuf.LengthDelimitedFramer does (a 4-byte
// big-endian length, then the frame), reducing the frames larger than max.
type omittingFramer struct{ max int }

func (f omittingFramer) NewFrameReader(r io.ReadCloser) io.ReadCloser {
	return &omittingReader{r: bufio.NewReaderSize(r, frameReadSize), c: r, max: f.max}
}

func (omittingFramer) NewFrameWriter(w io.Writer) io.Writer {
	return protobuf.LengthDelimitedFramer.NewFrameWriter(w)
}

type omittingReader struct {
	r   *bufio.Reader
	c   io.Closer
	max int
	// frame holds the frames up to max, reused; remaining is the part of the last frame not yet
	// returned
	frame, remaining []byte
}

// Read returns one frame per call, as runtime.Framer's readers do: when data is too small, the
// part that fits and io.ErrShortBuffer, then the rest on the next calls.
func (o *omittingReader) Read(data []byte) (int, error) {
	if len(o.remaining) == 0 {
		frame, err := o.next()
		if err != nil {
			return 0, err
		}
		o.remaining = frame
	}
	n := copy(data, o.remaining)
	if n < len(o.remaining) {
		o.remaining = o.remaining[n:]
		return n, io.ErrShortBuffer
	}
	o.remaining = nil
	return n, nil
}

func (o *omittingReader) Close() error { return o.c.Close() }

// next reads the next frame: whole when it is small, reduced when not.
func (o *omittingReader) next() ([]byte, error) {
	var header [4]byte
	if _, err := io.ReadFull(o.r, header[:]); err != nil {
		return nil, err
	}
	size := int(binary.BigEndian.Uint32(header[:]))
	if size > o.max {
		return reduceEvent(&stream{r: o.r, left: size}, o.max)
	}
	if cap(o.frame) < size {
		o.frame = make([]byte, size)
	}
	o.frame = o.frame[:size]
	if _, err := io.ReadFull(o.r, o.frame); err != nil {
		return nil, err
	}
	return o.frame, nil
}

// stream reads one message of a protobuf stream, left bytes long.
type stream struct {
	r    *bufio.Reader
	left int
}

var errProtoTruncated = errors.New("a protobuf message ends inside a field")

func (s *stream) byte() (byte, error) {
	if s.left <= 0 {
		return 0, errProtoTruncated
	}
	b, err := s.r.ReadByte()
	s.left--
	return b, err
}

func (s *stream) varint() (uint64, error) {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		b, err := s.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, errors.New("a protobuf varint is too long")
}

func (s *stream) tag() (protowire.Number, protowire.Type, error) {
	v, err := s.varint()
	return protowire.Number(v >> 3), protowire.Type(v & 7), err
}

// length reads a length-delimited field's length.
func (s *stream) length() (int, error) {
	v, err := s.varint()
	if err != nil {
		return 0, err
	}
	if v > uint64(s.left) {
		return 0, errProtoTruncated
	}
	return int(v), nil
}

// read reads n bytes, at most limit (what may be kept).
func (s *stream) read(n, limit int) ([]byte, error) {
	if n > limit {
		return nil, fmt.Errorf("a field of %d bytes in an object larger than the cache keeps (at most %d)", n, limit)
	}
	if n > s.left {
		return nil, errProtoTruncated
	}
	b := make([]byte, n)
	_, err := io.ReadFull(s.r, b)
	s.left -= n
	return b, err
}

func (s *stream) discard(n int) error {
	if n > s.left {
		return errProtoTruncated
	}
	_, err := s.r.Discard(n)
	s.left -= n
	return err
}

// sub is the stream of the next n bytes, a nested message; the caller accounts for them.
func (s *stream) sub(n int) *stream {
	s.left -= n
	return &stream{r: s.r, left: n}
}

// skip drops a field's value.
func (s *stream) skip(typ protowire.Type) error {
	switch typ {
	case protowire.VarintType:
		_, err := s.varint()
		return err
	case protowire.Fixed32Type:
		return s.discard(4)
	case protowire.Fixed64Type:
		return s.discard(8)
	case protowire.BytesType:
		n, err := s.length()
		if err != nil {
			return err
		}
		return s.discard(n)
	}
	return fmt.Errorf("a protobuf field of wire type %d", typ)
}

// eachField calls f for each field of the message; f reads or skips its value.
func (s *stream) eachField(f func(num protowire.Number, typ protowire.Type) error) error {
	for s.left > 0 {
		num, typ, err := s.tag()
		if err != nil {
			return err
		}
		if err := f(num, typ); err != nil {
			return err
		}
	}
	return nil
}

// reduceEvent reads a metav1.WatchEvent (type: 1, object: 2, a RawExtension) and returns it with
// its object reduced.
func reduceEvent(s *stream, max int) ([]byte, error) {
	var eventType, object []byte
	err := s.eachField(func(num protowire.Number, typ protowire.Type) (err error) {
		switch {
		case num == 1 && typ == protowire.BytesType:
			eventType, err = readField(s, max)
		case num == 2 && typ == protowire.BytesType:
			object, err = reduceNested(s, func(s *stream) ([]byte, error) { return reduceRawExtension(s, max) })
		default:
			err = s.skip(typ)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reduce a large watch event: %w", err)
	}
	out := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), eventType)
	return protowire.AppendBytes(protowire.AppendTag(out, 2, protowire.BytesType), object), nil
}

// reduceRawExtension reads a runtime.RawExtension (raw: 1, the API server's envelope and a
// runtime.Unknown) and returns it with the Unknown's object reduced.
func reduceRawExtension(s *stream, max int) ([]byte, error) {
	var raw []byte
	err := s.eachField(func(num protowire.Number, typ protowire.Type) (err error) {
		if num != 1 || typ != protowire.BytesType {
			return s.skip(typ)
		}
		raw, err = reduceNested(s, func(s *stream) ([]byte, error) { return reduceEnvelope(s, max) })
		return err
	})
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), raw), err
}

// reduceEnvelope reads the envelope ("k8s\x00") and the runtime.Unknown after it (typeMeta: 1,
// raw: 2, contentEncoding: 3, contentType: 4), and returns them with raw, the object's message,
// reduced.
func reduceEnvelope(s *stream, max int) ([]byte, error) {
	magic, err := s.read(len(protoEnvelope), len(protoEnvelope))
	if err != nil || !bytes.Equal(magic, protoEnvelope) {
		return nil, errors.New("a watch event's object does not start with the API server's envelope")
	}
	out := bytes.Clone(protoEnvelope)
	err = s.eachField(func(num protowire.Number, typ protowire.Type) error {
		if typ != protowire.BytesType || num > 4 {
			return s.skip(typ)
		}
		var v []byte
		var err error
		if num == 2 {
			v, err = reduceNested(s, func(s *stream) ([]byte, error) { return reduceObject(s, max) })
		} else {
			v, err = readField(s, max)
		}
		out = protowire.AppendBytes(protowire.AppendTag(out, num, protowire.BytesType), v)
		return err
	})
	return out, err
}

// reduceObject reads an object's message and returns its metadata (field 1 of every kind's
// message) and omittedField, the size of the message.
func reduceObject(s *stream, _ int) ([]byte, error) {
	size := s.left
	var metadata []byte
	err := s.eachField(func(num protowire.Number, typ protowire.Type) (err error) {
		if num == 1 && typ == protowire.BytesType {
			// whatever its size: the cache needs the object's name and UID (Omit drops its
			// annotations, and labels when large)
			metadata, err = readField(s, s.left)
			return err
		}
		return s.skip(typ)
	})
	out := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), metadata)
	return protowire.AppendVarint(protowire.AppendTag(out, omittedField, protowire.VarintType), uint64(size)), err
}

// readField reads a length-delimited field's value, at most max bytes.
func readField(s *stream, max int) ([]byte, error) {
	n, err := s.length()
	if err != nil {
		return nil, err
	}
	return s.read(n, max)
}

// reduceNested reads a length-delimited field holding a message, with reduce.
func reduceNested(s *stream, reduce func(*stream) ([]byte, error)) ([]byte, error) {
	n, err := s.length()
	if err != nil {
		return nil, err
	}
	return reduce(s.sub(n))
}

// omittedSize is the size of the body dropped from an object's message (omittedField), 0 when
// none was.
func omittedSize(message []byte) uint64 {
	var size uint64
	for len(message) > 0 {
		num, typ, n := protowire.ConsumeTag(message)
		if n < 0 {
			return 0
		}
		message = message[n:]
		if num == omittedField && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(message)
			if m < 0 {
				return 0
			}
			size, message = v, message[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, message)
		if m < 0 {
			return 0
		}
		message = message[m:]
	}
	return size
}
