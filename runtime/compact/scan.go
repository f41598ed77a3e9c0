package compact

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// This file reads JSON the API server sent without decoding what the caches never read: it finds
// where a value ends and walks an object's fields, without validating the bytes it skips. Every
// object is read through here once per watch event, and most of its bytes (a Pod's spec, other
// managers' fields) are never looked at until a sync decodes the whole object with the standard
// decoder, which validates it then. encoding/json (and sigs.k8s.io/json, which the API machinery
// uses) validate and scan the whole input before decoding a part of it, which made decoding the
// watch stream the largest cost of a converge; no decoder in the module graph skips.

var errTruncated = errors.New("truncated JSON")

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first byte at or after i that is not whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// stringEnd returns the index just past the string whose opening quote is at data[i].
func stringEnd(data []byte, i int) (int, error) {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++ // the escaped byte
		case '"':
			return i + 1, nil
		}
	}
	return 0, errTruncated
}

// valueEnd returns the index just past the JSON value that starts at data[i].
func valueEnd(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, errTruncated
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				end, err := stringEnd(data, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errTruncated
	default: // a number, true, false or null
		for ; i < len(data); i++ {
			if c := data[i]; c == ',' || c == '}' || c == ']' || isSpace(c) {
				return i, nil
			}
		}
		return i, nil
	}
}

// eachField calls fn with the key (unquoted) and the value (its JSON) of every field of the JSON
// object data, in order, until fn returns an error.
func eachField(data []byte, fn func(key string, value []byte) error) error {
	return eachRawField(data, func(_ []byte, key string, value []byte) error { return fn(key, value) })
}

// eachRawField is eachField that also passes each key as written (quoted, escapes kept).
func eachRawField(data []byte, fn func(rawKey []byte, key string, value []byte) error) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return fmt.Errorf("want a JSON object, got %.20q", data[i:])
	}
	for i = skipSpace(data, i+1); i < len(data) && data[i] != '}'; {
		if data[i] != '"' {
			return fmt.Errorf("want a field name at offset %d, got %.20q", i, data[i:])
		}
		i0 := i
		keyEnd, err := stringEnd(data, i)
		if err != nil {
			return err
		}
		key, err := unquote(data[i:keyEnd])
		if err != nil {
			return err
		}
		i = skipSpace(data, keyEnd)
		if i >= len(data) || data[i] != ':' {
			return fmt.Errorf("want ':' after field %q", key)
		}
		start := skipSpace(data, i+1)
		end, err := valueEnd(data, start)
		if err != nil {
			return fmt.Errorf("field %q: %w", key, err)
		}
		if err := fn(data[i0:keyEnd], key, data[start:end]); err != nil {
			return err
		}
		i = nextItem(data, end)
	}
	if i >= len(data) {
		return errTruncated
	}
	return nil
}

// eachElement calls fn with the JSON of every item of the JSON array data, in order, until fn
// returns an error.
func eachElement(data []byte, fn func(value []byte) error) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return fmt.Errorf("want a JSON array, got %.20q", data[i:])
	}
	for i = skipSpace(data, i+1); i < len(data) && data[i] != ']'; {
		end, err := valueEnd(data, i)
		if err != nil {
			return err
		}
		if err := fn(data[i:end]); err != nil {
			return err
		}
		i = nextItem(data, end)
	}
	if i >= len(data) {
		return errTruncated
	}
	return nil
}

// nextItem returns the index of the next field or item after a value ending at end: past the
// whitespace and the comma that follow it.
func nextItem(data []byte, end int) int {
	i := skipSpace(data, end)
	if i < len(data) && data[i] == ',' {
		i = skipSpace(data, i+1)
	}
	return i
}

// unquote returns the string the JSON string s holds. A string without escapes, as most keys and
// names are, is copied out as it is.
func unquote(s []byte) (string, error) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		inner := s[1 : len(s)-1]
		if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
			return string(inner), nil
		}
	}
	var out string
	if err := utiljson.Unmarshal(s, &out); err != nil {
		return "", err
	}
	return out, nil
}

// isNull reports whether a JSON value is null.
func isNull(value []byte) bool { return string(value) == "null" }
