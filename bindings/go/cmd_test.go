package nnc

import (
	"errors"
	"math"
	"math/rand"
	"strings"
	"testing"

	"nnc/internal/cref"
)

// Each builder against the same command made with libnnc's macros and run
// through the C API directly, on the same random inputs: the results must be
// identical.
func TestBuildersMatchC(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	type cas struct {
		name   string
		cmd    Cmd
		kind   int
		p      []float32
		in     []*cref.T
		out    [][]int
		stride int
		pad    int
	}
	x35 := ct(randFloats(r, 15), 3, 5)
	w45 := ct(randFloats(r, 20), 4, 5)
	b4 := ct(randFloats(r, 4), 4)
	img := ct(randFloats(r, 2*7*6*3), 2, 7, 6, 3)
	kern := ct(randFloats(r, 4*3*3*3), 4, 3, 3, 3)
	kb := ct(randFloats(r, 4), 4)
	pos := make([]float32, 15)
	for i := range pos {
		pos[i] = float32(r.Float64()) + 0.1
	}
	labels := ct([]float32{0, 4, 2}, 3)
	cases := []cas{
		{"dense", Gemm(NoTranspose, Transposed(0, 1)), cref.Dense, nil, []*cref.T{x35, w45, b4}, [][]int{{3, 4}}, 0, 0},
		{"gemm", Gemm(NoTranspose, NoTranspose), cref.Gemm, nil, []*cref.T{ct(randFloats(r, 15), 3, 5), ct(randFloats(r, 10), 5, 2)}, [][]int{{3, 2}}, 0, 0},
		{"conv", Convolution(1, 4, 3, 3, 3), cref.Conv, []float32{1, 4, 3, 3, 3}, []*cref.T{img, kern, kb}, [][]int{{2, 4, 3, 4}}, 2, 1},
		{"maxpool", MaxPool(2, 2), cref.MaxPool, []float32{2, 2}, []*cref.T{img}, [][]int{{2, 3, 3, 3}}, 2, 0},
		{"avgpool", AveragePool(3, 3), cref.AvgPool, []float32{3, 3}, []*cref.T{img}, [][]int{{2, 7, 6, 3}}, 1, 1},
		{"relu", ReLU(), cref.ReLU, nil, []*cref.T{x35}, [][]int{{3, 5}}, 0, 0},
		{"sigmoid", Sigmoid(), cref.Sigmoid, nil, []*cref.T{x35}, [][]int{{3, 5}}, 0, 0},
		{"tanh", Tanh(), cref.Tanh, nil, []*cref.T{x35}, [][]int{{3, 5}}, 0, 0},
		{"gelu", GELU(true), cref.GELU, []float32{1}, []*cref.T{x35}, [][]int{{3, 5}}, 0, 0},
		{"swish", Swish(), cref.Swish, nil, []*cref.T{x35}, [][]int{{3, 5}}, 0, 0},
		{"leaky", LeakyReLU(0.2), cref.LeakyReLU, []float32{0.2}, []*cref.T{x35}, [][]int{{3, 5}}, 0, 0},
		{"softmax", Softmax(), cref.Softmax, nil, []*cref.T{x35}, [][]int{{3, 5}}, 0, 0},
		{"sce", SoftmaxCrossEntropy(), cref.SCE, nil, []*cref.T{x35, labels}, [][]int{{3, 1}, {3, 5}}, 0, 0},
		{"mse", MSE(MSEMean), cref.MSE, nil, []*cref.T{x35, ct(randFloats(r, 15), 3, 5)}, [][]int{{3, 1}}, 0, 0},
		{"ewsum", EWSum(), cref.EWSum, nil, []*cref.T{x35, ct(randFloats(r, 15), 3, 5)}, [][]int{{3, 5}}, 0, 0},
		{"ewprod", EWProd(), cref.EWProd, nil, []*cref.T{x35, ct(randFloats(r, 15), 3, 5)}, [][]int{{3, 5}}, 0, 0},
		{"ewexp", EWExp(), cref.EWExp, nil, []*cref.T{x35}, [][]int{{3, 5}}, 0, 0},
		{"add", Add(0.5, -2), cref.Add, []float32{0.5, -2}, []*cref.T{x35, ct(randFloats(r, 5), 1, 5)}, [][]int{{3, 5}}, 0, 0},
		{"scalarmul", ScalarMul(3), cref.ScalarMul, []float32{3}, []*cref.T{x35}, [][]int{{3, 5}}, 0, 0},
		{"reducesum", ReduceSum(1), cref.ReduceSum, nil, []*cref.T{x35}, [][]int{{3, 1}}, 0, 0},
		{"layernorm", LayerNorm(1e-5, true, 1), cref.LayerNorm, []float32{1e-5}, []*cref.T{x35, ct(randFloats(r, 5), 1, 5), ct(randFloats(r, 5), 1, 5)}, [][]int{{3, 5}, {3, 1}, {3, 1}}, 0, 0},
		{"batchnorm", BatchNorm(1e-4, false, 0.9, 0, 1, 2), cref.BatchNorm, []float32{1e-4, 0.9},
			[]*cref.T{img, ct(randFloats(r, 3), 3), ct(randFloats(r, 3), 3), ct(make([]float32, 3), 3), ct([]float32{1, 1, 1}, 3)},
			[][]int{{2, 7, 6, 3}, {3}, {3}, {3}, {3}}, 0, 0},
		{"sgd", SGD(false, 0.1, 1, 0.01, 0.9, 0), cref.SGD, []float32{0.1, 1, 0.01, 0.9, 0}, []*cref.T{x35, ct(randFloats(r, 15), 3, 5), ct(randFloats(r, 15), 3, 5)}, [][]int{{3, 5}, {3, 5}}, 0, 0},
		{"adam", Adam(3, 0.01, 0.9, 0.999, 0, 1e-8, false), cref.Adam, []float32{3, 0.01, 0.9, 0.999, 0, 1e-8},
			[]*cref.T{x35, ct(randFloats(r, 15), 3, 5), ct(randFloats(r, 15), 3, 5), ct(pos, 3, 5)}, [][]int{{3, 5}, {3, 5}, {3, 5}}, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want []*cref.T
			for _, s := range c.out {
				want = append(want, zeros(s...))
			}
			if err := cref.Exec(c.kind, c.p, c.in, want, c.stride, c.pad); err != nil {
				t.Fatalf("C: %v", err)
			}
			in := tensors(t, c.in...)
			var out []*Tensor
			for _, s := range c.out {
				o := must(NewTensor(Float32, NHWC, s...))
				t.Cleanup(func() { o.Close() })
				out = append(out, o)
			}
			hint := NoHint
			if c.stride > 0 {
				hint = must(NewHint([]int{c.stride, c.stride}, []int{c.pad, c.pad}, []int{c.pad, c.pad}))
			}
			if err := Exec(c.cmd, hint, in, out); err != nil {
				t.Fatal(err)
			}
			for i, o := range out {
				sameAs(t, c.name, must(o.CopyFloat32s()), want[i].Data)
			}
		})
	}
}

// GEMM with a bias and a convolution against float64 loops.
func TestGemmConvClosedForm(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	const m, k, n = 7, 13, 5
	x, w, b := randFloats(r, m*k), randFloats(r, n*k), randFloats(r, n)
	in := tensors(t, ct(x, m, k), ct(w, n, k), ct(b, n))
	y := must(NewTensor(Float32, NHWC, m, n))
	defer y.Close()
	if err := Exec(Gemm(NoTranspose, Transposed(0, 1)), NoHint, in, []*Tensor{y}); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := float64(b[j])
			for l := 0; l < k; l++ {
				s += float64(x[i*k+l]) * float64(w[j*k+l])
			}
			want[i*n+j] = s
		}
	}
	closeTo(t, "dense", must(y.Float32s()), want, 1e-5)

	// 3x3 convolution, stride 1, padding 1, NHWC, 2 images of 5x6x3 into 4 channels.
	const N, H, W, C, K = 2, 5, 6, 3, 4
	img, ker, bias := randFloats(r, N*H*W*C), randFloats(r, K*3*3*C), randFloats(r, K)
	cin := tensors(t, ct(img, N, H, W, C), ct(ker, K, 3, 3, C), ct(bias, K))
	out := must(NewTensor(Float32, NHWC, N, H, W, K))
	defer out.Close()
	hint := must(NewHint([]int{1, 1}, []int{1, 1}, []int{1, 1}))
	if err := Exec(Convolution(1, K, 3, 3, C), hint, cin, []*Tensor{out}); err != nil {
		t.Fatal(err)
	}
	cw := make([]float64, N*H*W*K)
	for nn := 0; nn < N; nn++ {
		for i := 0; i < H; i++ {
			for j := 0; j < W; j++ {
				for kk := 0; kk < K; kk++ {
					s := float64(bias[kk])
					for di := 0; di < 3; di++ {
						for dj := 0; dj < 3; dj++ {
							ii, jj := i+di-1, j+dj-1
							if ii < 0 || jj < 0 || ii >= H || jj >= W {
								continue
							}
							for c := 0; c < C; c++ {
								s += float64(img[((nn*H+ii)*W+jj)*C+c]) * float64(ker[((kk*3+di)*3+dj)*C+c])
							}
						}
					}
					cw[((nn*H+i)*W+j)*K+kk] = s
				}
			}
		}
	}
	closeTo(t, "conv", must(out.CopyFloat32s()), cw, 1e-5)
}

// Backward commands: ReLU's gradient and softmax cross-entropy's against closed forms.
func TestBackward(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	x := randFloats(r, 12)
	g := randFloats(r, 12)
	in := tensors(t, ct(g, 3, 4), ct(x, 3, 4))
	y := must(NewTensor(Float32, NHWC, 3, 4))
	defer y.Close()
	if err := Exec(ReLU(), NoHint, in[1:], []*Tensor{y}); err != nil {
		t.Fatal(err)
	}
	dx := must(NewTensor(Float32, NHWC, 3, 4))
	defer dx.Close()
	if err := Exec(ReLU().Backward(), NoHint, []*Tensor{in[0], nil, y}, []*Tensor{dx}); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 12)
	for i := range x {
		if x[i] > 0 {
			want[i] = float64(g[i])
		}
	}
	closeTo(t, "relu backward", must(dx.Float32s()), want, 0)
	if id := ReLU().Backward().ID(); id != ReLU().ID()|1 {
		t.Fatalf("backward id %#x", id)
	}
}

// A bad shape gives *Error with ErrInvalid and the message C gives for the
// same call.
func TestErrorMapping(t *testing.T) {
	a := ct(make([]float32, 6), 2, 3)
	b := ct(make([]float32, 20), 4, 5)
	cerr := cref.Exec(cref.Gemm, nil, []*cref.T{a, b}, []*cref.T{zeros(2, 5)}, 0, 0)
	if cerr == nil || cerr.Error() == "" {
		t.Fatal("C accepted a 2x3 · 4x5 GEMM")
	}
	in := tensors(t, a, b)
	c := must(NewTensor(Float32, NHWC, 2, 5))
	defer c.Close()
	err := Exec(Gemm(NoTranspose, NoTranspose), NoHint, in, []*Tensor{c})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *nnc.Error, got %T %v", err, err)
	}
	if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrNoKernel) || errors.Is(err, ErrClosed) {
		t.Fatalf("errors.Is: %v (code %d)", err, e.Code)
	}
	if e.Message != cerr.Error() {
		t.Fatalf("message %q, C said %q", e.Message, cerr.Error())
	}
	if !strings.Contains(err.Error(), e.Message) || e.Op != "GEMM_FORWARD" {
		t.Fatalf("Error() = %q, op %q", err.Error(), e.Op)
	}

	// A builder refusing its arguments: the command carries the error.
	bad := BatchNorm(1e-5, false, 0.9, make([]int, 13)...)
	if !errors.Is(bad.Err(), ErrInvalid) || bad.Err().(*Error).Message == "" {
		t.Fatalf("BatchNorm with 13 axes: %v", bad.Err())
	}
	if err := Exec(bad, NoHint, in, nil); err != bad.Err() {
		t.Fatalf("Exec of a refused command: %v", err)
	}
	// A bad hint.
	if _, err := NewHint(make([]int, 13), nil, nil); !errors.Is(err, ErrInvalid) || err.(*Error).Message == "" {
		t.Fatalf("rank-13 hint: %v", err)
	}
	// A command without a kernel (no backend takes int32 EWEXP, say) maps to ErrNoKernel.
	i32 := must(NewTensor(Int32, NHWC, 4))
	defer i32.Close()
	o32 := must(NewTensor(Int32, NHWC, 4))
	defer o32.Close()
	if err := Exec(EWExp(), NoHint, []*Tensor{i32}, []*Tensor{o32}); !errors.Is(err, ErrNoKernel) && !errors.Is(err, ErrInvalid) {
		t.Fatalf("int32 EWEXP: %v", err)
	}
}

// Views: a strided window of a tensor as a command's input and output.
func TestViews(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	base := randFloats(r, 6*7)
	x := must(FromFloat32(base, 6, 7))
	defer x.Close()
	// Rows 1..4, columns 2..5.
	v := must(x.View([]int{1, 2}, []int{4, 4}, nil))
	defer v.Close()
	if !v.IsView() {
		t.Fatal("not a view")
	}
	got := must(v.CopyFloat32s())
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			if got[i*4+j] != base[(i+1)*7+j+2] {
				t.Fatalf("view (%d,%d) = %v, want %v", i, j, got[i*4+j], base[(i+1)*7+j+2])
			}
		}
	}
	if _, err := v.Float32s(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("flat slice of a strided view: %v", err)
	}
	// ReLU in place on the view: only the window changes.
	if err := Exec(ReLU(), NoHint, []*Tensor{v}, []*Tensor{v}); err != nil {
		t.Fatal(err)
	}
	all := must(x.Float32s())
	for i := 0; i < 6; i++ {
		for j := 0; j < 7; j++ {
			want := base[i*7+j]
			if i >= 1 && i < 5 && j >= 2 && j < 6 && want < 0 {
				want = 0
			}
			if all[i*7+j] != want {
				t.Fatalf("(%d,%d) = %v, want %v", i, j, all[i*7+j], want)
			}
		}
	}
	// A window outside the tensor is refused with the C message.
	if _, err := x.View([]int{4, 4}, []int{4, 4}, nil); !errors.Is(err, ErrInvalid) || err.(*Error).Message == "" {
		t.Fatalf("out-of-bounds view: %v", err)
	}
	// The view outlives its tensor's Close.
	x.Close()
	if got2 := must(v.CopyFloat32s()); got2[0] != float32(math.Max(float64(base[9]), 0)) {
		t.Fatalf("view after Close of its tensor: %v", got2[0])
	}
}

func TestStream(t *testing.T) {
	s := must(NewStream())
	defer s.Close()
	r := rand.New(rand.NewSource(5))
	a, b := randFloats(r, 1000), randFloats(r, 1000)
	in := tensors(t, ct(a, 1000), ct(b, 1000))
	c := must(NewTensor(Float32, NHWC, 1000))
	d := must(NewTensor(Float32, NHWC, 1000))
	defer c.Close()
	defer d.Close()
	if err := s.Exec(EWSum(), NoHint, in, []*Tensor{c}); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(EWProd(), NoHint, []*Tensor{c, in[0]}, []*Tensor{d}); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 1000)
	for i := range want {
		want[i] = float64(float32(a[i]+b[i]) * a[i])
	}
	closeTo(t, "stream", must(d.Float32s()), want, 0)
	// A failure while queuing or running surfaces as an error.
	bad := must(NewTensor(Float32, NHWC, 7))
	defer bad.Close()
	err := s.Exec(EWSum(), NoHint, in, []*Tensor{bad})
	if err == nil {
		err = s.Wait()
	}
	if !errors.Is(err, ErrInvalid) || err.(*Error).Message == "" {
		t.Fatalf("bad shapes on a stream: %v", err)
	}
	// A failure while running (a label outside the classes: found by the
	// kernel on the stream's thread) is Wait's error, and only Wait's: the
	// stream then runs the next command.
	logits := must(NewTensor(Float32, NHWC, 3, 5))
	labels := must(NewTensor(Float32, NHWC, 3))
	loss := must(NewTensor(Float32, NHWC, 3, 1))
	sm := must(NewTensor(Float32, NHWC, 3, 5))
	for _, x := range []*Tensor{logits, labels, loss, sm} {
		defer x.Close()
	}
	if err := labels.SetFloat32s([]float32{1, 9, 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(SoftmaxCrossEntropy(), NoHint, []*Tensor{logits, labels}, []*Tensor{loss, sm}); err != nil {
		t.Fatalf("queued: %v", err)
	}
	if err := s.Wait(); !errors.Is(err, ErrInvalid) || err.(*Error).Message == "" {
		t.Fatalf("a label outside the classes on a stream: %v", err)
	}
	if err := s.Exec(EWSum(), NoHint, in, []*Tensor{c}); err != nil {
		t.Fatalf("the call after a failed wait: %v", err)
	}
	if err := s.Wait(); err != nil {
		t.Fatalf("the wait after a failed wait: %v", err)
	}
	s.Close()
	s.Close()
	if err := s.Exec(EWSum(), NoHint, in, []*Tensor{c}); !errors.Is(err, ErrClosed) {
		t.Fatalf("exec on a closed stream: %v", err)
	}
}

// AutoHint derives the padding a same-size 3x3 convolution needs: the
// result equals the explicit hint's.
func TestAutoHint(t *testing.T) {
	r := rand.New(rand.NewSource(6))
	in := tensors(t, ct(randFloats(r, 2*7*6*3), 2, 7, 6, 3), ct(randFloats(r, 4*27), 4, 3, 3, 3), ct(randFloats(r, 4), 4))
	a := must(NewTensor(Float32, NHWC, 2, 7, 6, 4))
	defer a.Close()
	b := must(NewTensor(Float32, NHWC, 2, 7, 6, 4))
	defer b.Close()
	conv := Convolution(1, 4, 3, 3, 3)
	auto := must(AutoHint(conv, in[0], a))
	explicit := must(NewHint([]int{1, 1}, []int{1, 1}, []int{1, 1}))
	if err := Exec(conv, auto, in, []*Tensor{a}); err != nil {
		t.Fatal(err)
	}
	if err := Exec(conv, explicit, in, []*Tensor{b}); err != nil {
		t.Fatal(err)
	}
	sameAs(t, "auto hint", must(a.Float32s()), must(b.Float32s()))
}
