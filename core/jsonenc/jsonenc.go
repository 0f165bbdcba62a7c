// Package jsonenc appends JSON values to byte slices exactly as
// encoding/json's Marshal writes them, without reflection or allocation:
// the request log's records and the hook results written on every request
// use it.
package jsonenc

import (
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// ErrUnsupportedFloat is json.Marshal's refusal of NaN and infinities.
var ErrUnsupportedFloat = errors.New("json: unsupported value: NaN or infinite float")

// Word-at-a-time masks: a byte 0x01 and a byte 0x80 in every lane.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// HighBits is the top bit of every byte of a word: it masks what HasByte
// flags.
const HighBits = msb

// AppendFloat appends f as json.Marshal writes a float64: like %g, but
// with ES6's exponent cutoffs and an unpadded exponent. NaN and infinities
// are refused, as json.Marshal refuses them, and dst is returned unchanged.
func AppendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, ErrUnsupportedFloat
	}
	if f > 0 && f < maxMicros {
		// A whole number of millionths (execution times in milliseconds,
		// measured in microseconds): its shortest form has at most six
		// decimals, written without strconv's general algorithm.
		if n := math.Round(f * 1e6); n/1e6 == f {
			return appendMicros(dst, uint64(n)), nil
		}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 becomes e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// maxMicros bounds the floats AppendFloat writes as whole numbers of
// millionths: below it, one float's neighbours are less than a millionth
// apart, so no other number of millionths, nor a decimal with fewer digits,
// reads back as the same float.
const maxMicros = 1 << 32

// appendMicros writes n millionths as a decimal, without trailing zeros.
func appendMicros(dst []byte, n uint64) []byte {
	dst = strconv.AppendUint(dst, n/1e6, 10)
	frac := n % 1e6
	if frac == 0 {
		return dst
	}
	digits := 6
	for frac%10 == 0 {
		frac /= 10
		digits--
	}
	var buf [6]byte
	for i := digits - 1; i >= 0; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	dst = append(dst, '.')
	return append(dst, buf[:digits]...)
}

// AppendString appends s as a JSON string the way json.Marshal does: <, >
// and & escaped for HTML, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) && plainWord(s, i) {
			i += 8
			continue
		}
		if plainASCII[s[i]] {
			i++
			continue
		}
		if b := s[i]; b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plainASCII marks the ASCII bytes AppendString copies as they are; its
// 256 entries let any byte index it.
var plainASCII = func() (t [256]bool) {
	for b := ' '; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// plainWord reports whether the 8 bytes of s from i on are all in
// plainASCII, testing them at once in a word.
func plainWord(s string, i int) bool {
	_ = s[i+7]
	w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	// Each term flags (in its bytes' top bit) a byte that is, in order:
	// not ASCII, a control character, or one of the bytes escaped.
	bad := w | (w-lsb*' ')&^w | HasByte(w, '"') | HasByte(w, '\\') | HasByte(w, '<') | HasByte(w, '>') | HasByte(w, '&')
	return bad&msb == 0
}

// HasByte flags, in their top bit, the bytes of w equal to c, and possibly
// bytes above one that is (a borrow): in a little-endian word the lowest
// flagged byte is the first match. It is zero when none is.
func HasByte(w uint64, c byte) uint64 {
	x := w ^ lsb*uint64(c)
	return (x - lsb) &^ x
}
