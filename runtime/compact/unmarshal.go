package compact

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// maxNesting is how deeply encoding/json (and so sigs.k8s.io/json) lets arrays and objects nest,
// the top-level object counting as the first level.
const maxNesting = 10000

// unmarshalObject decodes a JSON document that is an object into the map
// k8s.io/apimachinery/pkg/util/json.Unmarshal(data, &m) makes of it (m a map[string]any), and
// fails where it fails:
//   - a number without a '.' that fits an int64 is an int64, any other number a float64
//     ("1e2" and "9223372036854775808" are float64, "-0" is int64 0, "1.0" is float64); a
//     number beyond the float64 range is an error;
//   - strings are unescaped as encoding/json does: invalid UTF-8 and lone surrogates become
//     U+FFFD, control characters are an error;
//   - of duplicate keys the last wins; empty arrays are empty (not nil) slices;
//   - a top-level null is a nil map and no error, any other top-level value an error, as is
//     anything but whitespace after the value, or nesting deeper than encoding/json allows.
//
// It exists because decoding a cached object into an unstructured one is a controller's hot path
// (a quarter of its CPU): encoding/json scans the whole document to validate it, then scans it
// again with its state machine to decode it, while this decoder validates as it decodes, in one
// pass. Its errors do not read as encoding/json's.
func unmarshalObject(data []byte) (map[string]any, error) {
	d := mapDecoder{data: data}
	d.skipSpace()
	var m map[string]any
	switch d.peek() {
	case '{':
		var err error
		if m, err = d.object(); err != nil {
			return nil, err
		}
	case 'n':
		// null into a map leaves the map nil.
		if _, err := d.literal("null", nil); err != nil {
			return nil, err
		}
	default:
		return nil, d.fail("the document is not a JSON object")
	}
	d.skipSpace()
	if d.pos != len(data) {
		return nil, d.fail("data after the top-level value")
	}
	return m, nil
}

// unmarshalError is a syntax error, or a number out of the float64 range, at an offset of the
// document.
type unmarshalError struct {
	msg    string
	offset int
}

func (e *unmarshalError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.offset, e.msg)
}

// mapDecoder is a recursive-descent JSON decoder: each method decodes one construct starting at
// pos and leaves pos just after it.
type mapDecoder struct {
	data  []byte
	pos   int
	depth int // how many arrays and objects enclose pos
	// elems holds the elements of the arrays being decoded (nested arrays stack theirs above
	// their parent's), so that each array is allocated once, at its final length.
	elems []any
	// buf is scratch space for unescaping strings.
	buf []byte
}

func (d *mapDecoder) fail(msg string) error {
	return &unmarshalError{msg: msg, offset: d.pos}
}

// peek returns the byte at pos, or 0 (which no JSON value starts or continues with) at the end.
func (d *mapDecoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

// skipSpace skips the four whitespace characters of JSON.
func (d *mapDecoder) skipSpace() { d.pos = skipSpace(d.data, d.pos) }

// value decodes any JSON value.
func (d *mapDecoder) value() (any, error) {
	switch c := d.peek(); c {
	case '{':
		m, err := d.object()
		return m, err
	case '[':
		a, err := d.array()
		return a, err
	case '"':
		return d.string()
	case 't':
		return d.literal("true", true)
	case 'f':
		return d.literal("false", false)
	case 'n':
		return d.literal("null", nil)
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return d.number()
		}
		if c == 0 && d.pos == len(d.data) {
			return nil, d.fail("unexpected end of JSON input")
		}
		return nil, d.fail("invalid character looking for a value")
	}
}

// enter counts one more level of nesting, failing beyond encoding/json's limit (which also keeps
// the recursion from exhausting the stack).
func (d *mapDecoder) enter() error {
	d.depth++
	if d.depth > maxNesting {
		return d.fail("exceeded max depth")
	}
	return nil
}

// object decodes an object; a key given twice keeps its last value.
func (d *mapDecoder) object() (map[string]any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '{'
	m := make(map[string]any)
	d.skipSpace()
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return m, nil
	}
	for {
		if d.peek() != '"' {
			return nil, d.fail("expected a string key")
		}
		key, err := d.string()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.peek() != ':' {
			return nil, d.fail("expected ':' after an object key")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		m[key] = v
		d.skipSpace()
		switch d.peek() {
		case ',':
			d.pos++
			d.skipSpace()
		case '}':
			d.pos++
			d.depth--
			return m, nil
		default:
			return nil, d.fail("expected ',' or '}' after an object value")
		}
	}
}

// array decodes an array; an empty one is an empty slice, not nil.
func (d *mapDecoder) array() ([]any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '['
	base := len(d.elems)
	d.skipSpace()
	if d.peek() != ']' {
		for {
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			d.elems = append(d.elems, v)
			d.skipSpace()
			if d.peek() == ']' {
				break
			}
			if d.peek() != ',' {
				return nil, d.fail("expected ',' or ']' after an array element")
			}
			d.pos++
			d.skipSpace()
		}
	}
	d.pos++ // ']'
	d.depth--
	a := make([]any, len(d.elems)-base)
	copy(a, d.elems[base:])
	clear(d.elems[base:]) // drop the references, the scratch slice outlives the values
	d.elems = d.elems[:base]
	return a, nil
}

// literal decodes true, false or null (word), whose value is v.
func (d *mapDecoder) literal(word string, v any) (any, error) {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return nil, d.fail("invalid literal, expected " + word)
	}
	d.pos += len(word)
	return v, nil
}

// number decodes a number of the strict JSON grammar (no leading zeros, '+' or bare '.'): an
// int64 if it has no '.' and fits (as sigs.k8s.io/json's PreserveInts), else a float64.
func (d *mapDecoder) number() (any, error) {
	data, start := d.data, d.pos
	i := start
	if data[i] == '-' {
		i++
	}
	intStart := i
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		i = skipDigits(data, i+1)
	default:
		d.pos = i
		return nil, d.fail("expected a digit in a number")
	}
	intEnd := i
	if i < len(data) && data[i] == '.' {
		if i++; i == len(data) || !isDigit(data[i]) {
			d.pos = i
			return nil, d.fail("expected a digit after the decimal point")
		}
		i = skipDigits(data, i)
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		if i++; i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i == len(data) || !isDigit(data[i]) {
			d.pos = i
			return nil, d.fail("expected a digit in the exponent")
		}
		i = skipDigits(data, i)
	}
	d.pos = i

	if i == intEnd { // an integer: no fraction, no exponent
		// Up to 18 digits always fit an int64, so skip strconv.
		if intEnd-intStart <= 18 {
			var n int64
			for _, c := range data[intStart:intEnd] {
				n = n*10 + int64(c-'0')
			}
			if intStart > start {
				n = -n
			}
			return n, nil
		}
		if n, err := strconv.ParseInt(string(data[start:i]), 10, 64); err == nil {
			return n, nil
		}
	}
	// A number with an exponent but no '.' fails strconv.ParseInt in sigs.k8s.io/json too, so it
	// is a float64 there as here.
	f, err := strconv.ParseFloat(string(data[start:i]), 64)
	if err != nil {
		d.pos = start
		return nil, d.fail("number out of the float64 range")
	}
	return f, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func skipDigits(data []byte, i int) int {
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	return i
}

// string decodes a string. Most strings (keys, names) have no escapes and are valid UTF-8: they
// are copied once; the others are unescaped by unescape.
func (d *mapDecoder) string() (string, error) {
	data := d.data
	start := d.pos + 1 // after '"'
	for i := start; i < len(data); {
		c := data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return string(data[start:i]), nil
		case c == '\\' || c < ' ':
			return d.unescape(start, i)
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return d.unescape(start, i)
			}
			i += size
		}
	}
	d.pos = len(data)
	return "", d.fail("unexpected end of JSON input in a string")
}

// unescape decodes the rest of the string that starts at start, from i (an escape, a control
// character or invalid UTF-8) on, as encoding/json does: each byte of invalid UTF-8 becomes
// U+FFFD, and so does an escaped surrogate that is not the first of a valid pair.
func (d *mapDecoder) unescape(start, i int) (string, error) {
	data := d.data
	d.buf = append(d.buf[:0], data[start:i]...)
	b := d.buf
	for i < len(data) {
		switch c := data[i]; {
		case c == '"':
			d.pos = i + 1
			d.buf = b
			return string(b), nil
		case c == '\\':
			var err error
			if b, i, err = d.escape(b, i); err != nil {
				return "", err
			}
		case c < ' ':
			d.pos = i
			return "", d.fail("control character in a string")
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(data[i:]) // utf8.RuneError, 1 if invalid
			b = utf8.AppendRune(b, r)
			i += size
		}
	}
	d.pos = len(data)
	return "", d.fail("unexpected end of JSON input in a string")
}

// escape appends to b the character of the escape sequence at i and returns the index after it.
func (d *mapDecoder) escape(b []byte, i int) ([]byte, int, error) {
	data := d.data
	if i+1 == len(data) {
		d.pos = len(data)
		return nil, 0, d.fail("unexpected end of JSON input in a string")
	}
	switch c := data[i+1]; c {
	case '"', '\\', '/':
		return append(b, c), i + 2, nil
	case 'b':
		return append(b, '\b'), i + 2, nil
	case 'f':
		return append(b, '\f'), i + 2, nil
	case 'n':
		return append(b, '\n'), i + 2, nil
	case 'r':
		return append(b, '\r'), i + 2, nil
	case 't':
		return append(b, '\t'), i + 2, nil
	case 'u':
		r := hex4(data, i+2)
		if r < 0 {
			d.pos = i
			return nil, 0, d.fail(`invalid \u escape`)
		}
		i += 6
		if utf16.IsSurrogate(r) {
			// Only a high surrogate followed by an escaped low one is a character; anything else
			// is U+FFFD, and the next escape, if any, is decoded on its own.
			next := rune(-1)
			if i+1 < len(data) && data[i] == '\\' && data[i+1] == 'u' {
				next = hex4(data, i+2)
			}
			if r = utf16.DecodeRune(r, next); r != utf8.RuneError {
				i += 6
			}
		}
		return utf8.AppendRune(b, r), i, nil
	default:
		d.pos = i
		return nil, 0, d.fail("invalid escape in a string")
	}
}

// hex4 returns the value of the four hex digits at i, or -1.
func hex4(data []byte, i int) rune {
	if len(data)-i < 4 {
		return -1
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
