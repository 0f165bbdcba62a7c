package cache

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"time"
)

// Record layout (entries bucket value), all integers varint-encoded:
//
//	version(1 byte) flags(1 byte: bit0 stream)
//	status createdAt expiresAt            (times as unix nanoseconds, 0 = zero time)
//	len(partition) partition              ("" for entries without a vector)
//	nHeaders { len(name) name nValues { len(value) value } }   (names sorted)
//	body                                  (the rest of the record)
//
// Vector value (vectors/<partition>/<key>):
//
//	expiresAt (8 bytes big-endian) then the float32s little-endian.
const recordVersion = 1

const flagStream = 1

var errCorrupt = errors.New("cache: corrupt record")

// record is a decoded entries value. Body aliases the encoded bytes.
type record struct {
	Entry
	Partition string
}

func timeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func nanosTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func encodeRecord(e *Entry, partition string) []byte {
	size := 2 + 3*binary.MaxVarintLen64 + binary.MaxVarintLen64 + len(partition) + binary.MaxVarintLen64 + len(e.Body)
	for name, vals := range e.Header {
		size += 2*binary.MaxVarintLen64 + len(name)
		for _, v := range vals {
			size += binary.MaxVarintLen64 + len(v)
		}
	}
	b := make([]byte, 0, size)
	var flags byte
	if e.Stream {
		flags |= flagStream
	}
	b = append(b, recordVersion, flags)
	b = binary.AppendUvarint(b, uint64(e.Status))
	b = binary.AppendVarint(b, timeNanos(e.CreatedAt))
	b = binary.AppendVarint(b, timeNanos(e.ExpiresAt))
	b = appendString(b, partition)
	names := make([]string, 0, len(e.Header))
	for name := range e.Header {
		names = append(names, name)
	}
	slices.Sort(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		b = appendString(b, name)
		vals := e.Header[name]
		b = binary.AppendUvarint(b, uint64(len(vals)))
		for _, v := range vals {
			b = appendString(b, v)
		}
	}
	return append(b, e.Body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errCorrupt
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = errCorrupt
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// decodeRecord decodes an entries value. When withBody is false the header
// and body are skipped (eviction only needs times and partition). The Body
// aliases b: copy it before b's transaction ends.
func decodeRecord(b []byte, withBody bool) (record, error) {
	var rec record
	if len(b) < 2 || b[0] != recordVersion {
		return rec, errCorrupt
	}
	rec.Stream = b[1]&flagStream != 0
	r := reader{b: b[2:]}
	status := r.uvarint()
	rec.CreatedAt = nanosTime(r.varint())
	rec.ExpiresAt = nanosTime(r.varint())
	rec.Partition = r.string()
	if status > math.MaxInt32 {
		return rec, errCorrupt
	}
	rec.Status = int(status)
	if !withBody || r.err != nil {
		return rec, r.err
	}
	nh := r.uvarint()
	if nh > uint64(len(r.b)) {
		return rec, errCorrupt
	}
	if nh > 0 {
		rec.Header = make(map[string][]string, nh)
	}
	for i := uint64(0); i < nh && r.err == nil; i++ {
		name := r.string()
		nv := r.uvarint()
		if nv > uint64(len(r.b)) {
			return rec, errCorrupt
		}
		vals := make([]string, 0, nv)
		for j := uint64(0); j < nv && r.err == nil; j++ {
			vals = append(vals, r.string())
		}
		rec.Header[name] = vals
	}
	rec.Body = r.b
	return rec, r.err
}

func encodeVector(vec []float32, expiresAt time.Time) []byte {
	b := make([]byte, 8, 8+4*len(vec))
	binary.BigEndian.PutUint64(b, uint64(timeNanos(expiresAt)))
	for _, f := range vec {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

func decodeVector(b []byte) (vec []float32, expires int64, err error) {
	if len(b) < 8 || (len(b)-8)%4 != 0 {
		return nil, 0, errCorrupt
	}
	expires = int64(binary.BigEndian.Uint64(b))
	vec = make([]float32, (len(b)-8)/4)
	for i := range vec {
		vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[8+4*i:]))
	}
	return vec, expires, nil
}

// ageKey is the age index key: created-at (8 bytes big-endian, so a cursor
// walks oldest first) followed by the entry key.
func ageKey(createdAt time.Time, key string) []byte {
	n := timeNanos(createdAt)
	if n < 0 {
		n = 0
	}
	b := make([]byte, 8, 8+len(key))
	binary.BigEndian.PutUint64(b, uint64(n))
	return append(b, key...)
}

// ageValue is the age index value: expires-at, so pruning expired entries at
// the old end needs no record decoding.
func ageValue(expiresAt time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(timeNanos(expiresAt)))
}

func expired(expiresNanos int64, now time.Time) bool {
	return expiresNanos != 0 && expiresNanos <= now.UnixNano()
}
