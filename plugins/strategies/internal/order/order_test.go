package order

import (
	"slices"
	"testing"
)

func TestAscending(t *testing.T) {
	for _, n := range []int{0, 1, 2, 64, 65, 200} {
		got := Ascending(n)
		want := make([]int, n)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(got, want) || cap(got) != n {
			t.Errorf("Ascending(%d) = %v (cap %d)", n, got, cap(got))
		}
	}
	// An append copies: the shared table is untouched.
	_ = append(Ascending(2), 99)
	if got := Ascending(3); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("after an append, Ascending(3) = %v", got)
	}
}

func TestOne(t *testing.T) {
	for _, i := range []int{-1, 0, 5, 63, 64, 1000} {
		if got := One(i); !slices.Equal(got, []int{i}) || cap(got) != 1 {
			t.Errorf("One(%d) = %v (cap %d)", i, got, cap(got))
		}
	}
}

func TestNoAllocation(t *testing.T) {
	if n := testing.AllocsPerRun(10, func() { Ascending(3); One(2) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
