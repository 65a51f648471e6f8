package nnc_test

import (
	"errors"
	"fmt"
	"log"
	"math/rand"

	"nnc"
)

// fillBatch draws 4-feature points of 3 well-separated classes.
func fillBatch(r *rand.Rand, xs, ys []float32) {
	centres := [3][4]float32{{2, 0, -1, 1}, {-2, 1, 1, -1}, {0, -2, 2, 0}}
	for i := range ys {
		c := r.Intn(3)
		for k := 0; k < 4; k++ {
			xs[i*4+k] = centres[c][k] + 0.6*float32(r.NormFloat64())
		}
		ys[i] = float32(c)
	}
}

// The README's quick start: a small MLP trained through the model API.
func Example() {
	r := rand.New(rand.NewSource(1))
	m := nnc.Must(nnc.Sequential("mlp", nnc.Must(nnc.DenseLayer(16, false)), nnc.Must(nnc.ReLULayer()), nnc.Must(nnc.DenseLayer(3, false))))
	defer m.Close()
	if err := m.Compile([]nnc.TensorParams{nnc.Float32NHWC(32, 4)},
		nnc.SGD(false, 0.05, 1.0/32, 0, 0.9, 0), nnc.SoftmaxCrossEntropy()); err != nil {
		log.Fatal(err)
	}
	x := nnc.Must(nnc.NewTensor(nnc.Float32, nnc.NHWC, 32, 4)) // features
	y := nnc.Must(nnc.NewTensor(nnc.Float32, nnc.NHWC, 32))    // class indices
	z := nnc.Must(nnc.NewTensor(nnc.Float32, nnc.NHWC, 32, 3)) // logits
	defer x.Close()
	defer y.Close()
	defer z.Close()
	xs, ys := nnc.Must(x.Float32s()), nnc.Must(y.Float32s()) // no copy: fill them in place
	for step := 0; step < 300; step++ {
		fillBatch(r, xs, ys)
		if err := m.Fit([]*nnc.Tensor{x}, []*nnc.Tensor{y}, []*nnc.Tensor{z}); err != nil {
			log.Fatal(err)
		}
	}
	fillBatch(r, xs, ys)
	if err := m.Evaluate([]*nnc.Tensor{x}, []*nnc.Tensor{z}); err != nil {
		log.Fatal(err)
	}
	zs, right := nnc.Must(z.Float32s()), 0
	for i, l := range ys {
		best := 0
		for c := 1; c < 3; c++ {
			if zs[i*3+c] > zs[i*3+best] {
				best = c
			}
		}
		if best == int(l) {
			right++
		}
	}
	fmt.Println("accuracy >= 0.9:", right >= 29)
	// Output: accuracy >= 0.9: true
}

// Errors carry the C library's message and match the sentinels.
func ExampleError() {
	a := nnc.Must(nnc.NewTensor(nnc.Float32, nnc.NHWC, 2, 3))
	b := nnc.Must(nnc.NewTensor(nnc.Float32, nnc.NHWC, 4, 5))
	c := nnc.Must(nnc.NewTensor(nnc.Float32, nnc.NHWC, 2, 5))
	defer a.Close()
	defer b.Close()
	defer c.Close()
	err := nnc.Exec(nnc.Gemm(nnc.NoTranspose, nnc.NoTranspose), nnc.NoHint, []*nnc.Tensor{a, b}, []*nnc.Tensor{c})
	var e *nnc.Error
	fmt.Println(errors.Is(err, nnc.ErrInvalid), errors.As(err, &e) && e.Message != "")
	// Output: true true
}
