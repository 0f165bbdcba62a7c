// Package order makes the strategies' plans' orders without an allocation
// in the common cases: they are windows of one shared, read-only table of
// indices. A plan's Order is only read (by the router); the windows' capacity
// ends with them, so an append copies instead of writing into the table.
package order

// indices holds 0, 1, 2, ...: enough for any group a person writes.
var indices = func() (s [64]int) {
	for i := range s {
		s[i] = i
	}
	return s
}()

// Ascending is 0, 1, ..., n-1.
func Ascending(n int) []int {
	if n <= len(indices) {
		return indices[:n:n]
	}
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// One is the order of target i alone.
func One(i int) []int {
	if i >= 0 && i < len(indices) {
		return indices[i : i+1 : i+1]
	}
	return []int{i}
}
