// Package cref runs commands through the C API directly, with libnnc's easy
// macros (CMD_*, TENSOR_LIST, HINT), for the binding's tests and its overhead
// benchmark: the binding's results are compared with these on the same inputs.
package cref

/*
#include "../../../cref/nnc_cref.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// Kinds of command.
const (
	Dense     = C.K_DENSE
	Gemm      = C.K_GEMM
	Conv      = C.K_CONV
	MaxPool   = C.K_MAX_POOL
	AvgPool   = C.K_AVG_POOL
	ReLU      = C.K_RELU
	Sigmoid   = C.K_SIGMOID
	Tanh      = C.K_TANH
	Softmax   = C.K_SOFTMAX
	SCE       = C.K_SCE
	EWSum     = C.K_EWSUM
	EWProd    = C.K_EWPROD
	BatchNorm = C.K_BNORM
	SGD       = C.K_SGD
	MSE       = C.K_MSE
	Add       = C.K_ADD
	Adam      = C.K_ADAM
	LeakyReLU = C.K_LEAKY_RELU
	EWExp     = C.K_EWEXP
	ScalarMul = C.K_SCALAR_MUL
	GELU      = C.K_GELU
	LayerNorm = C.K_LAYER_NORM
	Swish     = C.K_SWISH
	ReduceSum = C.K_REDUCE_SUM
)

// T is a packed NHWC float32 tensor: its values and shape. A nil T is an
// empty slot.
type T struct {
	Data  []float32
	Shape []int
}

func init() { C.ccv_nnc_init() }

// Exec runs kind with parameters p on inputs, writing outputs' Data (which
// must have the right length). hintStride > 0 gives a hint of that stride and
// symmetric padding hintPad. The error carries the C message.
func Exec(kind int, p []float32, inputs, outputs []*T, hintStride, hintPad int) error {
	all := append(append([]*T{}, inputs...), outputs...)
	if len(all) > 16 {
		return errors.New("cref: at most 16 tensors")
	}
	data := (*[16]*C.float)(C.calloc(16, C.size_t(unsafe.Sizeof((*C.float)(nil)))))
	defer C.free(unsafe.Pointer(data))
	dims := make([]C.int, 16*C.CCV_NNC_MAX_DIM_ALLOC)
	for i, t := range all {
		if t == nil {
			continue
		}
		bytes := C.size_t(4 * len(t.Data))
		if bytes == 0 {
			bytes = 4
		}
		data[i] = (*C.float)(C.malloc(bytes))
		defer C.free(unsafe.Pointer(data[i]))
		if len(t.Data) > 0 {
			C.memcpy(unsafe.Pointer(data[i]), unsafe.Pointer(&t.Data[0]), C.size_t(4*len(t.Data)))
		}
		for j, d := range t.Shape {
			dims[i*C.CCV_NNC_MAX_DIM_ALLOC+j] = C.int(d)
		}
	}
	var params [8]C.float
	for i, v := range p {
		params[i] = C.float(v)
	}
	msg := (*C.char)(C.calloc(1024, 1))
	defer C.free(unsafe.Pointer(msg))
	code := C.cref_exec(C.int(kind), &params[0], C.int(len(inputs)), C.int(len(outputs)), &data[0], &dims[0], C.int(hintStride), C.int(hintPad), msg, 1024)
	if code != 0 {
		return errors.New(C.GoString(msg))
	}
	for i, t := range outputs {
		if t != nil && len(t.Data) > 0 {
			C.memcpy(unsafe.Pointer(&t.Data[0]), unsafe.Pointer(data[len(inputs)+i]), C.size_t(4*len(t.Data)))
		}
	}
	return nil
}

// EWSumNs is C's time per EWSUM call on 1-element tensors, over n calls.
func EWSumNs(n int) float64 { return float64(C.cref_ewsum_ns(C.int(n))) }
