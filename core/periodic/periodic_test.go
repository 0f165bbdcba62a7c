package periodic

import (
	"testing"
	"time"
)

func TestLoops(t *testing.T) {
	for _, tc := range []struct {
		name string
		loop func(stop <-chan struct{}, interval time.Duration, job func())
		// stopAfter closes stop in the job's n-th call; 0 closes it
		// before the loop starts.
		stopAfter int
		want      int
	}{
		{"NowAndEvery runs once at once even when stopped", NowAndEvery, 0, 1},
		{"Every does not run when stopped", Every, 0, 0},
		{"NowAndEvery runs until stopped", NowAndEvery, 3, 3},
		{"Every runs until stopped", Every, 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			if tc.stopAfter == 0 {
				close(stop)
			}
			interval := time.Hour // never ticks while stop is closed at once
			if tc.stopAfter > 0 {
				interval = time.Millisecond
			}
			calls := 0
			tc.loop(stop, interval, func() {
				calls++
				if calls == tc.stopAfter {
					close(stop)
				}
			})
			if calls != tc.want {
				t.Fatalf("job ran %d times, want %d", calls, tc.want)
			}
		})
	}
}
