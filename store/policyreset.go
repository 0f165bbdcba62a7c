package store

import "time"

// NextUsageReset is when usage governed by a reset rule resets next after
// now: "weekly" at the next Monday 00:00 UTC, "monthly" on the first of the
// next month 00:00 UTC, days > 0 at now + days×24h. Without a rule it is
// nil: usage then never resets by itself.
func NextUsageReset(periodic string, days int, now time.Time) *time.Time {
	now = now.UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	var t time.Time
	switch {
	case periodic == "weekly":
		ahead := (int(time.Monday) - int(now.Weekday()) + 7) % 7
		if ahead == 0 { // a Monday: the next one, even at 00:00 exactly
			ahead = 7
		}
		t = midnight.AddDate(0, 0, ahead)
	case periodic == "monthly":
		t = time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	case days > 0:
		t = now.Add(time.Duration(days) * 24 * time.Hour)
	default:
		return nil
	}
	return &t
}
