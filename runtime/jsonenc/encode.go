package jsonenc

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Marshal returns the JSON encoding of v, as encoding/json.Marshal(v) does.
func Marshal(v any) ([]byte, error) {
	return appendValue(make([]byte, 0, 512), v)
}

// appendValue appends the JSON encoding of v to dst, as encoding/json.Marshal(v) writes it.
func appendValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return appendString(dst, v), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return fallBack(dst, v) // encoding/json's error
		}
		return appendFloat(dst, v), nil
	case map[string]any:
		return appendMap(dst, v)
	case []any:
		return appendList(dst, v)
	default:
		return fallBack(dst, v)
	}
}

// fallBack appends what encoding/json writes for v.
func fallBack(dst []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

func appendMap(dst []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(dst, "null"...), nil
	}
	var keysArray [16]string
	keys := keysArray[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(appendString(dst, k), ':')
		var err error
		if dst, err = appendValue(dst, m[k]); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

func appendList(dst []byte, l []any) ([]byte, error) {
	if l == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i, v := range l {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendValue(dst, v); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// appendFloat writes a finite float64 as encoding/json does: in the shortest form that reads
// back the same, with an exponent only below 1e-6 or from 1e21 on, and no leading zero in it.
func appendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1] // e-07 becomes e-7
		dst = dst[:n-1]
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendString writes s quoted as encoding/json does: quotes, backslashes and control characters
// escaped, so are <, > and & (HTML-safe) and U+2028 and U+2029 (JavaScript-safe); invalid UTF-8
// becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is still to copy as it is
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			escape := escapeOf(c)
			dst = append(append(dst, s[start:i]...), escape...)
			if escape == `\u00` {
				dst = append(dst, hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(append(dst, s[start:i]...), `\u202`...)
			dst = append(dst, hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(dst, s[start:]...), '"')
}

// plain are the ASCII bytes written in a string as they are.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = escapeOf(byte(c)) == ""
	}
	return t
}()

// escapeOf returns how an ASCII byte is written in a string: "" as it is, `\u00` followed by its
// two hex digits, or its short escape.
func escapeOf(c byte) string {
	switch c {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '<', '>', '&':
		return `\u00`
	}
	if c < 0x20 {
		return `\u00`
	}
	return ""
}
