package main

// The TypeScript controller is the spec, and some of what it renders depends on
// JavaScript's own rules: how String(number) prints, what is truthy, how
// JSON.stringify escapes a string, how encodeURIComponent encodes. These
// helpers reproduce exactly those rules so the rendered bodies (and the hashes
// over them) are identical byte for byte.

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// toFloat reads any JSON number representation we meet (encoding/json gives
// float64, unstructured objects int64, typed objects converted with
// ToUnstructured int64/int32) as a JavaScript number.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float32:
		return float64(n), true
	}
	return 0, false
}

// jsNumber prints a number as JavaScript's Number.prototype.toString does
// (and so JSON.stringify): fixed notation from 1e-6 up to 1e21, shortest
// round-trip digits, exponent form with an explicit sign and no padding outside.
func jsNumber(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		return "0" // also -0
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // e.g. 1.5e-07
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + string(sign) + exp
}

// numberJSON is JSON.stringify of a number: non-finite numbers become null.
func numberJSON(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "null"
	}
	return jsNumber(f)
}

// jsString is String(v) for the JSON values a spec can hold.
func jsString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	case int64:
		return strconv.FormatInt(x, 10)
	}
	if f, ok := toFloat(v); ok {
		return jsNumber(f)
	}
	return "[object Object]" // not a value the CRD allows here
}

// truthy is JavaScript truthiness for JSON values.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	}
	if f, ok := toFloat(v); ok {
		return f != 0 && !math.IsNaN(f)
	}
	return true
}

// lessUTF16 orders strings by UTF-16 code units, as JavaScript's < does
// (byte order differs only for characters above U+FFFF against U+E000-U+FFFF).
func lessUTF16(a, b string) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		ca, cb := a[i], b[j]
		if ca < utf8.RuneSelf && cb < utf8.RuneSelf {
			if ca != cb {
				return ca < cb
			}
			i++
			j++
			continue
		}
		ra, na := utf8.DecodeRuneInString(a[i:])
		rb, nb := utf8.DecodeRuneInString(b[j:])
		if ra != rb {
			return utf16Unit(ra) < utf16Unit(rb)
		}
		i += na
		j += nb
	}
	return i == len(a) && j < len(b) // a is a proper prefix of b
}

// utf16Unit is the first UTF-16 code unit of a rune: all that decides an
// order between two different runes (a surrogate pair's lead sorts D800-DBFF).
func utf16Unit(r rune) uint16 {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return uint16(hi)
	}
	return uint16(r)
}

// appendJSONString appends JSON.stringify(s): only quotes, backslashes and
// control characters are escaped (unlike encoding/json, U+2028/U+2029 and
// HTML characters stay as they are).
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"':
			buf = append(buf, '\\', '"')
		case '\\':
			buf = append(buf, '\\', '\\')
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// encodeURIComponent escapes every UTF-8 byte except A-Z a-z 0-9 - _ . ! ~ * ' ( ).
func encodeURIComponent(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}
