package adminsvc

import (
	"strconv"
	"testing"

	"github.com/llm-gateway/gateway/core"
)

// The analytics bounds count the records a query matches, not those of
// the range it skips (another workspace's, another trace's): a narrow
// query over a busy range is not cut short by records it never counts.
func TestScanCappedCountsMatchesOnly(t *testing.T) {
	// 1,000 records, newest first; every tenth matches.
	page := func(after string, chunk int, fn func(r *core.LogRecord) error) (string, error) {
		start := 0
		if after != "" {
			start, _ = strconv.Atoi(after)
			start++
		}
		for i := start; i < 1000; i++ {
			if i-start == chunk {
				return strconv.Itoa(i - 1), nil
			}
			if i%10 == 0 {
				if err := fn(&core.LogRecord{ID: strconv.Itoa(i)}); err != nil {
					return "", err
				}
			}
		}
		return "", nil
	}
	for _, tc := range []struct {
		name                    string
		maxMatch, maxRead, want int
		truncated               bool
	}{
		{"all 100 matches fit", 100, 1000, 100, false},
		{"more matches than counted", 50, 1000, 50, true},
		{"the read budget ends first", 100, 300, 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			truncated, err := scanCapped(page, tc.maxMatch, tc.maxRead, 100, func(*core.LogRecord) { n++ })
			if err != nil || n != tc.want || truncated != tc.truncated {
				t.Fatalf("%d records, truncated %v, err %v; want %d, %v", n, truncated, err, tc.want, tc.truncated)
			}
		})
	}
}
