package nnc

import "testing"

func BenchmarkExecEWSum1(b *testing.B) {
	x := must(FromFloat32([]float32{1}, 1))
	y := must(FromFloat32([]float32{2}, 1))
	z := must(NewTensor(Float32, NHWC, 1))
	defer x.Close()
	defer y.Close()
	defer z.Close()
	cmd := EWSum()
	in, out := []*Tensor{x, y}, []*Tensor{z}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Exec(cmd, NoHint, in, out); err != nil {
			b.Fatal(err)
		}
	}
}
