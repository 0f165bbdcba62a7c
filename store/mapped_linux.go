package store

import "syscall"

// dropMapped tells the kernel the process no longer needs the pages of the
// file mapping at addr (size bytes): MADV_DONTNEED on a shared file mapping
// unmaps them from the process; the page cache keeps them.
func dropMapped(addr uintptr, size int64) error {
	if size <= 0 {
		return nil
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, uintptr(size), syscall.MADV_DONTNEED); errno != 0 {
		return errno
	}
	return nil
}
