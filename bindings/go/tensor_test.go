package nnc

import (
	"errors"
	"math/rand"
	"runtime"
	"testing"
)

func TestTensorRoundTrip(t *testing.T) {
	data := []float32{1, 2, 3, 4, 5, 6}
	x := must(FromFloat32(data, 2, 3))
	defer x.Close()
	if s := x.Shape(); len(s) != 2 || s[0] != 2 || s[1] != 3 {
		t.Fatalf("shape %v", s)
	}
	if x.DataType() != Float32 || x.Format() != NHWC || x.Len() != 6 {
		t.Fatalf("%v", x)
	}
	got := must(x.CopyFloat32s())
	sameAs(t, "round trip", got, data)
	// Converting copies: float32 in, float64 out.
	d := must(x.CopyFloat64s())
	for i := range d {
		if d[i] != float64(data[i]) {
			t.Fatalf("float64 copy %v", d)
		}
	}
	y := must(FromFloat64([]float64{0.5, -1.25}, 2))
	defer y.Close()
	if v := must(y.Float64s()); v[0] != 0.5 || v[1] != -1.25 {
		t.Fatalf("float64 tensor %v", v)
	}
	// Wrong lengths and types are refused.
	if _, err := FromFloat32(data, 4, 2); !errors.Is(err, ErrInvalid) {
		t.Fatalf("6 values for 8 elements: %v", err)
	}
	if _, err := y.Float32s(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("float32 slice of a float64 tensor: %v", err)
	}
}

func TestTensorBadShape(t *testing.T) {
	for _, shape := range [][]int{{2, -1}, {}, {0}, make([]int, 13)} {
		if _, err := NewTensor(Float32, NHWC, shape...); !errors.Is(err, ErrInvalid) {
			t.Fatalf("shape %v: want ErrInvalid, got %v", shape, err)
		}
	}
	// A bad data type is refused by C with its message.
	_, err := NewTensor(DataType(0x777), NHWC, 2)
	var e *Error
	if !errors.As(err, &e) || e.Message == "" || !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad data type: %v", err)
	}
}

// The zero-copy slice is the tensor's memory: writes go both ways.
func TestZeroCopyAliasing(t *testing.T) {
	x := must(NewTensor(Float32, NHWC, 4))
	defer x.Close()
	y := must(NewTensor(Float32, NHWC, 4))
	defer y.Close()
	xs := must(x.Float32s())
	ys := must(y.Float32s())
	copy(xs, []float32{-1, 2, -3, 4})
	if err := Exec(ReLU(), NoHint, []*Tensor{x}, []*Tensor{y}); err != nil {
		t.Fatal(err)
	}
	sameAs(t, "relu through slices", ys, []float32{0, 2, 0, 4})
	if err := Exec(ScalarMul(2), NoHint, []*Tensor{y}, []*Tensor{x}); err != nil {
		t.Fatal(err)
	}
	sameAs(t, "output seen through the slice", xs, []float32{0, 4, 0, 8})
}

// Close is idempotent; use after Close is ErrClosed, never a crash.
func TestCloseIdempotent(t *testing.T) {
	x := must(FromFloat32([]float32{1, 2}, 2))
	y := must(NewTensor(Float32, NHWC, 2))
	defer y.Close()
	if err := Exec(EWExp(), NoHint, []*Tensor{x}, []*Tensor{y}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := x.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !x.Closed() || x.Shape() != nil || x.Len() != 0 || x.String() != "Tensor(closed)" {
		t.Fatalf("closed tensor: %v", x)
	}
	checks := map[string]error{
		"Exec":         Exec(EWExp(), NoHint, []*Tensor{x}, []*Tensor{y}),
		"Float32s":     func() error { _, err := x.Float32s(); return err }(),
		"CopyFloat32s": func() error { _, err := x.CopyFloat32s(); return err }(),
		"SetFloat32s":  x.SetFloat32s([]float32{1, 2}),
		"View":         func() error { _, err := x.View([]int{0}, []int{1}, nil); return err }(),
		"Zero":         x.Zero(),
	}
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) || !errors.Is(err, ErrInvalid) {
			t.Fatalf("%s after Close: %v", name, err)
		}
	}
	var nilTensor *Tensor
	if err := nilTensor.Close(); err != nil {
		t.Fatal(err)
	}
}

// 10,000 tensors and views made and closed leave the C live-object count
// where it was; so do ones dropped without Close, once finalizers have run.
func TestNoLeak(t *testing.T) {
	runtime.GC()
	before := LiveObjects(LiveTensor)
	for i := 0; i < 10000; i++ {
		x := must(NewTensor(Float32, NHWC, 3, 4))
		v := must(x.View([]int{1, 1}, []int{2, 2}, nil))
		if LiveObjects(LiveTensor) != before+2 {
			t.Fatalf("step %d: %d live, want %d", i, LiveObjects(LiveTensor), before+2)
		}
		x.Close()
		v.Close()
	}
	if n := LiveObjects(LiveTensor); n != before {
		t.Fatalf("after 10000 create/close: %d live tensors, %d before", n, before)
	}
	// The finalizer backstop.
	func() {
		for i := 0; i < 1000; i++ {
			_ = must(NewTensor(Float32, NHWC, 8))
		}
	}()
	for i := 0; i < 20 && LiveObjects(LiveTensor) != before; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if n := LiveObjects(LiveTensor); n != before {
		t.Fatalf("finalizers left %d live tensors, %d before", n, before)
	}
	// Streams, graphs, variables and models.
	all := LiveObjects(LiveAll)
	for i := 0; i < 10000; i++ {
		s := must(NewStream())
		s.Close()
	}
	for i := 0; i < 200; i++ {
		g := must(NewGraph())
		a := must(g.VariableFromFloat32([]float32{1, 2}, 2))
		b := must(g.Variable())
		if err := g.Exec(EWExp(), NoHint, []*Variable{a}, []*Variable{b}); err != nil {
			t.Fatal(err)
		}
		a.Close()
		if i%2 == 0 {
			b.Close()
		}
		g.Close()
		m := must(Sequential("m", must(DenseLayer(3, false)), must(ReLULayer())))
		if err := m.Compile([]TensorParams{Float32NHWC(2, 4)}, SGD(false, 0.1, 1, 0, 0, 0), MSE(MSEMean)); err != nil {
			t.Fatal(err)
		}
		m.Close()
	}
	if n := LiveObjects(LiveAll); n != all {
		t.Fatalf("streams, graphs, models: %d live objects, %d before", n, all)
	}
}

// Goroutines with their own tensors, concurrently (run under -race).
func TestConcurrentGoroutines(t *testing.T) {
	const workers, rounds = 8, 200
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func(seed int64) {
			errs <- func() error {
				r := rand.New(rand.NewSource(seed))
				a, err := FromFloat32(randFloats(r, 12), 3, 4)
				if err != nil {
					return err
				}
				defer a.Close()
				b, err := FromFloat32(randFloats(r, 20), 5, 4)
				if err != nil {
					return err
				}
				defer b.Close()
				c, err := NewTensor(Float32, NHWC, 3, 5)
				if err != nil {
					return err
				}
				defer c.Close()
				av, _ := a.CopyFloat32s()
				bv, _ := b.CopyFloat32s()
				for i := 0; i < rounds; i++ {
					if err := Exec(Gemm(NoTranspose, Transposed(0, 1)), NoHint, []*Tensor{a, b}, []*Tensor{c}); err != nil {
						return err
					}
					cv, _ := c.Float32s()
					for m := 0; m < 3; m++ {
						for n := 0; n < 5; n++ {
							s := 0.0
							for k := 0; k < 4; k++ {
								s += float64(av[m*4+k]) * float64(bv[n*4+k])
							}
							if d := float64(cv[m*5+n]) - s; d > 1e-5 || d < -1e-5 {
								return &Error{Code: CodeInvalid, Message: "wrong product"}
							}
						}
					}
					// An error on this goroutine carries this goroutine's message.
					bad := Exec(Gemm(NoTranspose, NoTranspose), NoHint, []*Tensor{a, b}, []*Tensor{c})
					if !errors.Is(bad, ErrInvalid) || bad.(*Error).Message == "" {
						return bad
					}
				}
				return nil
			}()
		}(int64(w))
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestABI(t *testing.T) {
	if ABIVersion() != ABIVersionExpected {
		t.Fatalf("ABI %d", ABIVersion())
	}
	if err := checkABI(); err != nil {
		t.Fatal(err)
	}
	if Version() == "" {
		t.Fatal("no version")
	}
}
