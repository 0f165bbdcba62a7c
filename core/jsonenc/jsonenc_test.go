package jsonenc

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestAppendFloatMatchesMarshal covers whole numbers of millionths (written
// without strconv), their neighbours and the bounds of that path.
func TestAppendFloatMatchesMarshal(t *testing.T) {
	floats := []float64{0, math.Copysign(0, -1), 0.012, 0.01, 0.049, 1, 3, 0.1 + 0.2, 1.0 / 3, 1e-6, 9.99e-7, 0.000123, 123.456789,
		maxMicros - 1e-6, maxMicros, maxMicros + 0.5, 1e21, -0.012, 5e-324, math.MaxFloat64}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		f := float64(rng.Uint64N(1<<40)) / 1e6
		floats = append(floats, f, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)), f*1e-3)
	}
	for _, f := range floats {
		want, _ := json.Marshal(f)
		got, err := AppendFloat(nil, f)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("AppendFloat(%v) = %s, %v; json.Marshal: %s", f, got, err, want)
		}
	}
}

// TestAppendStringMatchesMarshal covers the word-at-a-time path: each byte
// that needs escaping, at each offset of a word.
func TestAppendStringMatchesMarshal(t *testing.T) {
	for _, c := range []string{"\"", "\\", "<", ">", "&", "\x00", "\x1f", "\x7f", " ", "é", "\xff", "\u2028"} {
		for i := range 17 {
			s := strings.Repeat("a", i) + c + strings.Repeat("b", 17-i)
			want, _ := json.Marshal(s)
			if got := AppendString(nil, s); !bytes.Equal(got, want) {
				t.Fatalf("AppendString(%q) = %s; json.Marshal: %s", s, got, want)
			}
		}
	}
}
