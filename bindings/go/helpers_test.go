package nnc

import (
	"math"
	"math/rand"
	"testing"

	"nnc/internal/cref"
)

func randFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.Float64()*2 - 1)
	}
	return v
}

func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// must returns v, or panics with err (the test fails with its stack).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// tensors makes float32 tensors from ct values (nil stays nil), closed at the
// end of the test.
func tensors(t testing.TB, ts ...*cref.T) []*Tensor {
	t.Helper()
	out := make([]*Tensor, len(ts))
	for i, c := range ts {
		if c == nil {
			continue
		}
		x := must(FromFloat32(c.Data, c.Shape...))
		t.Cleanup(func() { x.Close() })
		out[i] = x
	}
	return out
}

func ct(data []float32, shape ...int) *cref.T { return &cref.T{Data: data, Shape: shape} }

func zeros(shape ...int) *cref.T { return &cref.T{Data: make([]float32, prod(shape)), Shape: shape} }

// closeTo checks got against want elementwise within tol·(1 + |want|).
func closeTo(t testing.TB, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); d > tol*(1+math.Abs(want[i])) || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s: element %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// sameAs checks got against the C result bit for bit (same kernels, same inputs).
func sameAs(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want[i]))) {
			t.Fatalf("%s: element %d is %v, C gave %v", what, i, got[i], want[i])
		}
	}
}
