package nnc

import (
	"math/rand"
	"testing"
)

// The C test's small convolutional network (test/c/libnnc_style_d_cnnp.c)
// built through the binding: two blobs in the plane as 4x4 images (the point
// repeated) must come apart.
func TestTrainConvNet(t *testing.T) {
	const n, steps = 32, 60
	hint1 := must(NewHint([]int{1, 1}, []int{1, 1}, []int{1, 1}))
	hint2 := must(NewHint([]int{2, 2}, nil, nil))
	m := must(Sequential("blobs",
		must(ConvolutionLayer(1, 4, 3, 3, hint1, false)),
		must(ReLULayer()),
		must(MaxPoolLayer(2, 2, hint2)),
		must(FlattenLayer()),
		must(DenseLayer(2, false))))
	defer m.Close()
	if err := m.Compile([]TensorParams{Float32NHWC(n, 4, 4, 1)}, SGD(false, 0.1, 1.0/n, 0, 0.9, 0), SoftmaxCrossEntropy()); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(9))
	x := must(NewTensor(Float32, NHWC, n, 4, 4, 1))
	defer x.Close()
	label := must(NewTensor(Float32, NHWC, n))
	defer label.Close()
	z := must(NewTensor(Float32, NHWC, n, 2))
	defer z.Close()
	xs, ls := must(x.Float32s()), must(label.Float32s())
	draw := func() {
		for i := 0; i < n; i++ {
			c := r.Intn(2)
			px := float32(-1.5 + 3*float64(c) + 0.5*r.NormFloat64())
			py := float32(1 - 2*float64(c) + 0.5*r.NormFloat64())
			for k := 0; k < 16; k++ {
				if k&1 == 1 {
					xs[i*16+k] = px
				} else {
					xs[i*16+k] = py
				}
			}
			ls[i] = float32(c)
		}
	}
	for step := 0; step < steps; step++ {
		draw()
		if err := m.Fit([]*Tensor{x}, []*Tensor{label}, []*Tensor{z}); err != nil {
			t.Fatal(err)
		}
	}
	draw()
	if err := m.Evaluate([]*Tensor{x}, []*Tensor{z}); err != nil {
		t.Fatal(err)
	}
	if acc := accuracy(must(z.Float32s()), ls, 2); acc < float64(n-2)/n {
		t.Fatalf("%.0f of %d held-out points right", acc*n, n)
	}
}
