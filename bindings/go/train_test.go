package nnc

import (
	"errors"
	"math"
	"math/rand"
	"path/filepath"
	"testing"
)

// blobs draws n points of 4 features in 3 well-separated Gaussian classes.
func blobs(r *rand.Rand, n int) (x []float32, labels []float32) {
	centres := [3][4]float64{{2, 0, -1, 1}, {-2, 1, 1, -1}, {0, -2, 2, 0}}
	for i := 0; i < n; i++ {
		c := r.Intn(3)
		for k := 0; k < 4; k++ {
			x = append(x, float32(centres[c][k]+0.6*r.NormFloat64()))
		}
		labels = append(labels, float32(c))
	}
	return x, labels
}

func accuracy(logits []float32, labels []float32, classes int) float64 {
	right := 0
	for i, l := range labels {
		best := 0
		for c := 1; c < classes; c++ {
			if logits[i*classes+c] > logits[i*classes+best] {
				best = c
			}
		}
		if best == int(l) {
			right++
		}
	}
	return float64(right) / float64(len(labels))
}

func newMLP(t *testing.T) *Model {
	m := must(Sequential("mlp", must(DenseLayer(16, false)), must(ReLULayer()), must(DenseLayer(3, false))))
	const batch = 32
	if err := m.Compile([]TensorParams{Float32NHWC(batch, 4)}, SGD(false, 0.05, 1.0/batch, 0, 0.9, 0), SoftmaxCrossEntropy()); err != nil {
		t.Fatal(err)
	}
	return m
}

// A small MLP trained through the binding (model API) separates the classes
// of held-out points; written and read back, a second model computes the same.
func TestTrainMLP(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	const batch = 32
	m := newMLP(t)
	defer m.Close()
	x := must(NewTensor(Float32, NHWC, batch, 4))
	defer x.Close()
	y := must(NewTensor(Float32, NHWC, batch))
	defer y.Close()
	z := must(NewTensor(Float32, NHWC, batch, 3))
	defer z.Close()
	xs, ys := must(x.Float32s()), must(y.Float32s())
	var first, last float64
	for step := 0; step < 300; step++ {
		px, pl := blobs(r, batch)
		copy(xs, px)
		copy(ys, pl)
		if err := m.Fit([]*Tensor{x}, []*Tensor{y}, []*Tensor{z}); err != nil {
			t.Fatal(err)
		}
		loss := 0.0
		zs := must(z.Float32s())
		for i := 0; i < batch; i++ {
			row := zs[i*3 : i*3+3]
			mx := math.Max(float64(row[0]), math.Max(float64(row[1]), float64(row[2])))
			s := 0.0
			for _, v := range row {
				s += math.Exp(float64(v) - mx)
			}
			loss += math.Log(s) + mx - float64(row[int(pl[i])])
		}
		if step == 0 {
			first = loss / batch
		}
		last = loss / batch
	}
	if last > 0.3*first {
		t.Fatalf("loss %g at the start, %g at the end", first, last)
	}
	// Held-out accuracy over 10 batches.
	right := 0.0
	var tx []float32
	var tl []float32
	for b := 0; b < 10; b++ {
		px, pl := blobs(r, batch)
		copy(xs, px)
		if err := m.Evaluate([]*Tensor{x}, []*Tensor{z}); err != nil {
			t.Fatal(err)
		}
		right += accuracy(must(z.Float32s()), pl, 3)
		if b == 0 {
			tx, tl = px, pl
		}
	}
	if acc := right / 10; acc < 0.95 {
		t.Fatalf("held-out accuracy %.3f, want >= 0.95", acc)
	}
	_ = tl

	// With a zero learning rate (and no momentum) fit changes nothing: two
	// steps on one batch give the same outputs; a real rate then moves them.
	if err := m.SetMinimizer(SGD(false, 0, 1.0/batch, 0, 0, 0), true); err != nil {
		t.Fatal(err)
	}
	copy(xs, tx)
	outs := make([][]float32, 3)
	for i := range outs {
		if i == 2 {
			if err := m.SetMinimizer(SGD(false, 0.5, 1.0/batch, 0, 0, 0), true); err != nil {
				t.Fatal(err)
			}
			if err := m.Fit([]*Tensor{x}, []*Tensor{y}, []*Tensor{z}); err != nil {
				t.Fatal(err)
			}
		}
		if err := m.Fit([]*Tensor{x}, []*Tensor{y}, []*Tensor{z}); err != nil {
			t.Fatal(err)
		}
		outs[i] = must(z.CopyFloat32s())
	}
	sameAs(t, "fit at rate 0", outs[1], outs[0])
	moved := false
	for i := range outs[2] {
		moved = moved || outs[2][i] != outs[0][i]
	}
	if !moved {
		t.Fatal("fit at rate 0.5 left the outputs unchanged")
	}

	// Write, read into a fresh model, and compare outputs on the same batch.
	path := filepath.Join(t.TempDir(), "mlp.sqlite3")
	if err := m.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	copy(xs, tx)
	if err := m.Evaluate([]*Tensor{x}, []*Tensor{z}); err != nil {
		t.Fatal(err)
	}
	want := must(z.CopyFloat32s())
	m2 := newMLP(t)
	defer m2.Close()
	if err := m2.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	z2 := must(NewTensor(Float32, NHWC, batch, 3))
	defer z2.Close()
	if err := m2.Evaluate([]*Tensor{x}, []*Tensor{z2}); err != nil {
		t.Fatal(err)
	}
	sameAs(t, "model read back", must(z2.Float32s()), want)
	// Reading a missing file fails with the C message.
	if err := m2.ReadFile(filepath.Join(t.TempDir(), "none.sqlite3")); !errors.Is(err, ErrInvalid) || err.(*Error).Message == "" {
		t.Fatalf("reading a missing file: %v", err)
	}
	// Fit with the wrong input shape fails with a message, and the model still works.
	bad := must(NewTensor(Float32, NHWC, batch, 5))
	defer bad.Close()
	if err := m.Fit([]*Tensor{bad}, []*Tensor{y}, []*Tensor{z}); !errors.Is(err, ErrInvalid) || err.(*Error).Message == "" {
		t.Fatalf("fit on 5 features: %v", err)
	}
	// Layers given to Sequential belong to it.
	d := must(DenseLayer(2, false))
	s := must(Sequential("s", d))
	defer s.Close()
	if err := d.Compile([]TensorParams{Float32NHWC(1, 2)}, SGD(false, 0.1, 1, 0, 0, 0), Cmd{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("compiling a layer owned by a sequential model: %v", err)
	}
	d.Close() // nothing: the composite frees it
	m.Close()
	m.Close()
	if err := m.Evaluate([]*Tensor{x}, []*Tensor{z}); !errors.Is(err, ErrClosed) {
		t.Fatalf("evaluate after Close: %v", err)
	}
}

// The dynamic graph: a gradient against its closed form, then least squares
// fitted by Minimize to the weights that generated the data.
func TestDynamicGraph(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	g := must(NewGraph())
	defer g.Close()
	const n, k = 16, 4
	truth := []float64{0.5, -1, 0.25, 2}
	xs := randFloats(r, n*k)
	ts := make([]float32, n)
	for i := 0; i < n; i++ {
		s := 0.0
		for j := 0; j < k; j++ {
			s += truth[j] * float64(xs[i*k+j])
		}
		ts[i] = float32(s)
	}
	x := must(g.ConstantFromFloat32(xs, n, k))
	target := must(g.ConstantFromFloat32(ts, n, 1))
	w := must(g.VariableFromFloat32([]float32{0.1, 0.2, -0.3, 0.4}, 1, k))
	loss := func() (*Variable, []*Variable) {
		y, e, sq, l := must(g.Variable()), must(g.Variable()), must(g.Variable()), must(g.Variable())
		for _, c := range []struct {
			cmd     Cmd
			in, out []*Variable
		}{
			{Gemm(NoTranspose, Transposed(0, 1)), []*Variable{x, w}, []*Variable{y}},
			{Add(1, -1), []*Variable{y, target}, []*Variable{e}},
			{EWProd(), []*Variable{e, e}, []*Variable{sq}},
			{ReduceSum(0), []*Variable{sq}, []*Variable{l}},
		} {
			if err := g.Exec(c.cmd, NoHint, c.in, c.out); err != nil {
				t.Fatal(err)
			}
		}
		return l, []*Variable{y, e, sq}
	}
	l, tmp := loss()
	grads, err := g.Backward([]*Variable{l}, []*Variable{w})
	if err != nil {
		t.Fatal(err)
	}
	e := must(tmp[1].CopyFloat32s())
	want := make([]float64, k)
	for i := 0; i < n; i++ {
		for j := 0; j < k; j++ {
			want[j] += 2 * float64(e[i]) * float64(xs[i*k+j])
		}
	}
	closeTo(t, "dloss/dw", must(grads[0].CopyFloat32s()), want, 1e-4)
	for _, v := range append(tmp, l, grads[0]) {
		v.Close()
	}
	opt := must(g.NewOptimizer(SGD(false, 0.02, 1, 0, 0.5, 0), []*Variable{w}))
	defer opt.Close()
	for step := 0; step < 400; step++ {
		l, tmp := loss()
		if err := g.Minimize(opt, []*Variable{l}); err != nil {
			t.Fatal(err)
		}
		for _, v := range append(tmp, l) {
			v.Close()
		}
	}
	got := must(w.CopyFloat32s())
	closeTo(t, "fitted weights", got, truth, 1e-3)
	// A bad exec (wrong shapes) is an error with the C message.
	bad := must(g.VariableFromFloat32([]float32{1, 2, 3}, 3))
	out := must(g.Variable())
	if err := g.Exec(Gemm(NoTranspose, NoTranspose), NoHint, []*Variable{x, bad}, []*Variable{out}); !errors.Is(err, ErrInvalid) || err.(*Error).Message == "" {
		t.Fatalf("bad GEMM in the graph: %v", err)
	}
	// Variables are closed with their graph.
	g.Close()
	if _, err := w.CopyFloat32s(); !errors.Is(err, ErrClosed) {
		t.Fatalf("variable after the graph's Close: %v", err)
	}
	w.Close()
}
