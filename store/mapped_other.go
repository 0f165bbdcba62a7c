//go:build !linux

package store

// dropMapped does nothing outside Linux, where MADV_DONTNEED on a file
// mapping is not known to only drop clean pages.
func dropMapped(uintptr, int64) error { return nil }
