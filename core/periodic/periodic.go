// Package periodic runs a job on a fixed interval until told to stop: the
// loop of the gateway's background workers (log pruning, key expiry,
// alert sending, releasing the store's mapped pages, limit resets).
package periodic

import "time"

// NowAndEvery calls job at once, even if stop is already closed, and then
// every interval until stop is closed. It blocks until then; a call under
// way when stop closes is waited for, and no call starts after it has
// closed.
func NowAndEvery(stop <-chan struct{}, interval time.Duration, job func()) {
	job()
	Every(stop, interval, job)
}

// Every calls job every interval, the first time one interval from now,
// until stop is closed. It blocks until then; a call under way when stop
// closes is waited for, and no call starts after it has closed.
func Every(stop <-chan struct{}, interval time.Duration, job func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		// A tick and stop may both be ready; select picks either.
		select {
		case <-stop:
			return
		default:
			job()
		}
	}
}
