package store

import (
	"testing"
	"time"
)

func TestNextUsageReset(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name     string
		periodic string
		days     int
		now      string
		want     string // "" for nil
	}{
		{"weekly from a Sunday", "weekly", 0, "2026-03-01T12:00:00Z", "2026-03-02T00:00:00Z"},
		{"weekly from a Monday at midnight", "weekly", 0, "2026-03-02T00:00:00Z", "2026-03-09T00:00:00Z"},
		{"weekly from a Wednesday", "weekly", 0, "2026-03-04T23:59:59Z", "2026-03-09T00:00:00Z"},
		{"weekly in another zone", "weekly", 0, "2026-03-02T01:00:00+02:00", "2026-03-02T00:00:00Z"},
		{"monthly", "monthly", 0, "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"},
		{"monthly across the year", "monthly", 0, "2026-12-31T23:00:00Z", "2027-01-01T00:00:00Z"},
		{"days", "", 30, "2026-03-01T12:00:00Z", "2026-03-31T12:00:00Z"},
		{"no rule", "", 0, "2026-03-01T12:00:00Z", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := NextUsageReset(tc.periodic, tc.days, at(tc.now))
			if tc.want == "" {
				if got != nil {
					t.Fatalf("got %v, want nil", got)
				}
				return
			}
			if got == nil || !got.Equal(at(tc.want)) || got.Location() != time.UTC {
				t.Fatalf("got %v, want %s", got, tc.want)
			}
		})
	}
}
