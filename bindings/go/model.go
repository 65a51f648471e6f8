package nnc

/*
#include <stdlib.h>
#include <nnc/ccv_nnc.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Model is a model of the model API (ccv_cnnp_*): a layer, or a composition of
// layers. Compile it for input shapes, a minimiser and a loss, then Fit and
// Evaluate it.
type Model struct {
	p     *C.ccv_cnnp_model_t
	owned bool     // taken over by a composite model: freed with it
	name  *C.char  // C copy of the name, freed with the model
	keep  []*Model // layers taken over (their names are freed with this model)
}

// TensorParams describes a tensor without one: type, layout and shape.
type TensorParams struct {
	DataType DataType
	Format   Format
	Shape    []int
}

// Float32NHWC is the description of an NHWC float32 tensor of this shape.
func Float32NHWC(shape ...int) TensorParams {
	return TensorParams{DataType: Float32, Format: NHWC, Shape: shape}
}

func newModel(op string, name string, f func(name *C.char) *C.ccv_cnnp_model_t) (*Model, error) {
	var cname *C.char
	if name != "" {
		cname = C.CString(name)
	}
	var p *C.ccv_cnnp_model_t
	err := cCall(op, func() int {
		p = f(cname)
		if p == nil {
			return CodeInvalid
		}
		return 0
	})
	if err != nil {
		C.free(unsafe.Pointer(cname))
		return nil, err
	}
	m := &Model{p: p, name: cname}
	runtime.SetFinalizer(m, (*Model).Close)
	return m, nil
}

// DenseLayer is a fully connected layer with count outputs (y = x·wᵀ + b).
func DenseLayer(count int, noBias bool) (*Model, error) {
	return newModel("DenseLayer", "", func(n *C.char) *C.ccv_cnnp_model_t {
		return C.ccv_cnnp_dense(C.int(count), cBool(noBias), 0, 1, n)
	})
}

// ReLULayer is max(x, 0) as a layer.
func ReLULayer() (*Model, error) {
	return newModel("ReLULayer", "", func(n *C.char) *C.ccv_cnnp_model_t { return C.ccv_cnnp_relu(n) })
}

// SigmoidLayer is the logistic function as a layer.
func SigmoidLayer() (*Model, error) {
	return newModel("SigmoidLayer", "", func(n *C.char) *C.ccv_cnnp_model_t { return C.ccv_cnnp_sigmoid(n) })
}

// TanhLayer is tanh as a layer.
func TanhLayer() (*Model, error) {
	return newModel("TanhLayer", "", func(n *C.char) *C.ccv_cnnp_model_t { return C.ccv_cnnp_tanh(n) })
}

// SoftmaxLayer is softmax over the last axis as a layer.
func SoftmaxLayer() (*Model, error) {
	return newModel("SoftmaxLayer", "", func(n *C.char) *C.ccv_cnnp_model_t { return C.ccv_cnnp_softmax(n) })
}

// FlattenLayer reshapes N×… into N×(product of the rest).
func FlattenLayer() (*Model, error) {
	return newModel("FlattenLayer", "", func(n *C.char) *C.ccv_cnnp_model_t { return C.ccv_cnnp_flatten(n) })
}

// ConvolutionLayer: filters outputs, a kh×kw window, the hint's stride and
// padding (NoHint: stride 1, no padding), NHWC.
func ConvolutionLayer(groups, filters, kh, kw int, hint Hint, noBias bool) (*Model, error) {
	var kdim, dilation [MaxDims]C.int
	kdim[0], kdim[1] = C.int(kh), C.int(kw)
	return newModel("ConvolutionLayer", "", func(n *C.char) *C.ccv_cnnp_model_t {
		return C.ccv_cnnp_convolution(C.int(groups), C.int(filters), &kdim[0], &dilation[0], cBool(noBias), hint.value(), 0, 1, n)
	})
}

// MaxPoolLayer over kh×kw windows with the hint's stride and padding.
func MaxPoolLayer(kh, kw int, hint Hint) (*Model, error) {
	var kdim [MaxDims]C.int
	kdim[0], kdim[1] = C.int(kh), C.int(kw)
	return newModel("MaxPoolLayer", "", func(n *C.char) *C.ccv_cnnp_model_t { return C.ccv_cnnp_max_pool(&kdim[0], hint.value(), n) })
}

// BatchNormLayer normalises over all but the channel axis.
func BatchNormLayer(momentum, epsilon float32) (*Model, error) {
	return newModel("BatchNormLayer", "", func(n *C.char) *C.ccv_cnnp_model_t {
		return C.ccv_cnnp_batch_norm(C.float(momentum), C.float(epsilon), 1, n)
	})
}

// Sequential applies the layers one after the other. It takes them over:
// they are freed with it, and using them on their own is refused.
func Sequential(name string, layers ...*Model) (*Model, error) {
	const op = "Sequential"
	ps := make([]*C.ccv_cnnp_model_t, len(layers))
	for i, l := range layers {
		if l == nil || l.p == nil || l.owned {
			return nil, closedError(op + " (a layer is closed or already part of a model)")
		}
		ps[i] = l.p
	}
	if len(ps) == 0 {
		return nil, invalidError(op, "no layers")
	}
	m, err := newModel(op, name, func(n *C.char) *C.ccv_cnnp_model_t {
		return C.ccv_cnnp_sequential_new(&ps[0], C.int(len(ps)), 1, n)
	})
	if err != nil {
		return nil, err
	}
	for _, l := range layers {
		l.owned = true
		runtime.SetFinalizer(l, nil)
		m.keep = append(m.keep, l)
	}
	return m, nil
}

func (m *Model) handle(op string) (*C.ccv_cnnp_model_t, error) {
	if m == nil || m.p == nil {
		return nil, closedError(op)
	}
	if m.owned {
		return nil, closedError(op + " (the layer belongs to a composite model)")
	}
	return m.p, nil
}

// Close frees the model (and the layers it took over). Calling it again does
// nothing; a layer taken over by a composite model is freed with it.
func (m *Model) Close() error {
	if m == nil || m.p == nil || m.owned {
		return nil
	}
	runtime.SetFinalizer(m, nil)
	C.ccv_cnnp_model_free(m.p)
	m.release()
	return nil
}

func (m *Model) release() {
	m.p = nil
	C.free(unsafe.Pointer(m.name))
	m.name = nil
	for _, l := range m.keep {
		l.release()
	}
	m.keep = nil
}

// Compile builds the model for these input shapes, with a minimiser (SGD,
// Adam, …) and a loss (SoftmaxCrossEntropy, MSE, …; a zero Cmd{} for none).
func (m *Model) Compile(inputs []TensorParams, minimizer, loss Cmd) error {
	const op = "Model.Compile"
	p, err := m.handle(op)
	if err != nil {
		return err
	}
	if minimizer.err != nil {
		return minimizer.err
	}
	if loss.err != nil {
		return loss.err
	}
	params := make([]C.ccv_nnc_tensor_param_t, len(inputs))
	for i, in := range inputs {
		params[i], err = shapeParams(op, in.DataType, in.Format, in.Shape)
		if err != nil {
			return err
		}
	}
	if len(params) == 0 {
		return invalidError(op, "no input shapes")
	}
	err = cCall(op, func() int {
		return int(C.ccv_cnnp_model_compile_p(p, &params[0], C.int(len(params)), minimizer.native(), loss.native()))
	})
	runtime.KeepAlive(m)
	runtime.KeepAlive(minimizer.b)
	runtime.KeepAlive(loss.b)
	return err
}

func tensorHandles(op string, ts []*Tensor) ([]*C.ccv_nnc_tensor_t, error) {
	h := make([]*C.ccv_nnc_tensor_t, len(ts))
	for i, t := range ts {
		p, ok := tensorPtr(t)
		if !ok {
			return nil, closedError(op)
		}
		h[i] = p
	}
	return h, nil
}

func firstTensor(h []*C.ccv_nnc_tensor_t) **C.ccv_nnc_tensor_t {
	if len(h) == 0 {
		return nil
	}
	return &h[0]
}

// Fit runs one training step: forward on inputs, the loss against fits,
// backward and the minimiser; outputs receive the model's outputs.
func (m *Model) Fit(inputs, fits, outputs []*Tensor) error {
	const op = "Model.Fit"
	p, err := m.handle(op)
	if err != nil {
		return err
	}
	in, err1 := tensorHandles(op, inputs)
	fi, err2 := tensorHandles(op, fits)
	out, err3 := tensorHandles(op, outputs)
	for _, e := range []error{err1, err2, err3} {
		if e != nil {
			return e
		}
	}
	err = cCall(op, func() int {
		C.ccv_cnnp_model_fit(p, firstTensor(in), C.int(len(in)), firstTensor(fi), C.int(len(fi)), firstTensor(out), C.int(len(out)), nil, nil)
		return voidFailed()
	})
	runtime.KeepAlive(m)
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(fits)
	runtime.KeepAlive(outputs)
	return err
}

// Evaluate runs the model forward for inference (is_test) on inputs into
// outputs.
func (m *Model) Evaluate(inputs, outputs []*Tensor) error {
	const op = "Model.Evaluate"
	p, err := m.handle(op)
	if err != nil {
		return err
	}
	in, err1 := tensorHandles(op, inputs)
	out, err2 := tensorHandles(op, outputs)
	if err1 != nil {
		return err1
	}
	if err2 != nil {
		return err2
	}
	var params C.ccv_cnnp_evaluate_param_t
	params.is_test = 1
	err = cCall(op, func() int {
		C.ccv_cnnp_model_evaluate(p, params, firstTensor(in), C.int(len(in)), firstTensor(out), C.int(len(out)), nil, nil)
		return voidFailed()
	})
	runtime.KeepAlive(m)
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(outputs)
	return err
}

// SetMinimizer replaces the minimiser of every parameter (reset: forget its
// state, e.g. momenta).
func (m *Model) SetMinimizer(minimizer Cmd, reset bool) error {
	const op = "Model.SetMinimizer"
	p, err := m.handle(op)
	if err != nil {
		return err
	}
	if minimizer.err != nil {
		return minimizer.err
	}
	err = cCall(op, func() int {
		C.ccv_cnnp_model_set_minimizer(p, *minimizer.native(), cBool(reset), nil, 0)
		return voidFailed()
	})
	runtime.KeepAlive(minimizer.b)
	runtime.KeepAlive(m)
	return err
}

// WriteFile saves the parameters and minimiser state to a SQLite file.
func (m *Model) WriteFile(path string) error {
	const op = "Model.WriteFile"
	p, err := m.handle(op)
	if err != nil {
		return err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	err = cCall(op, func() int {
		C.ccv_cnnp_model_write_to_file(p, cpath, nil)
		return voidFailed()
	})
	runtime.KeepAlive(m)
	return err
}

// ReadFile loads parameters and minimiser state written by WriteFile into the
// compiled model (all or nothing).
func (m *Model) ReadFile(path string) error {
	const op = "Model.ReadFile"
	p, err := m.handle(op)
	if err != nil {
		return err
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	err = cCall(op, func() int {
		C.ccv_cnnp_model_read_from_file(cpath, nil, p)
		return voidFailed()
	})
	runtime.KeepAlive(m)
	return err
}
