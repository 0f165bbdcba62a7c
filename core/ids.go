package core

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/google/uuid"
)

// NewID returns a random UUID, the id of every admin record and of generated
// trace ids.
func NewID() string { return uuid.NewString() }

// LogIDPrefix is the time part of a log record id, 16 hex digits of Unix
// nanoseconds, so that ids sort by creation time.
func LogIDPrefix(t time.Time) string {
	var b [16]byte
	putLogIDPrefix(&b, t)
	return string(b[:])
}

func putLogIDPrefix(b *[16]byte, t time.Time) {
	const digits = "0123456789abcdef"
	n := uint64(t.UnixNano())
	for i := 15; i >= 0; i-- {
		b[i] = digits[n&0xf]
		n >>= 4
	}
}

// NewLogID returns a log record id for a record created at t: its time prefix
// and 8 random hex digits.
func NewLogID(t time.Time) string {
	var id [24]byte
	putLogIDPrefix((*[16]byte)(id[:16]), t)
	var r [4]byte
	_, _ = rand.Read(r[:])
	hex.Encode(id[16:], r[:])
	return string(id[:])
}
