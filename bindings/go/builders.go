package nnc

/*
#include <nnc/ccv_nnc.h>
*/
import "C"

import "fmt"

// Transpose names the two axes of a GEMM operand to swap; NoTranspose swaps
// none. For 2-d operands use Transposed(0, 1), for batched 3-d ones
// Transposed(1, 2).
type Transpose [2]int

// NoTranspose leaves a GEMM operand as it is.
var NoTranspose = Transpose{0, 0}

// Transposed swaps axes a and b of a GEMM operand.
func Transposed(a, b int) Transpose { return Transpose{a, b} }

// cInts copies v into C ints (Go memory; C reads it only during the call).
func cInts(v []int) *C.int {
	if len(v) == 0 {
		return nil
	}
	c := make([]C.int, len(v))
	for i, x := range v {
		c[i] = C.int(x)
	}
	return &c[0]
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Gemm is C = A · B (+ bias): inputs |a|b|bias (optional)|, output |c|, with
// the given operand transposes. A dense layer y = x·wᵀ + b is
// Gemm(NoTranspose, Transposed(0, 1)) on |x|w|b|.
func Gemm(a, b Transpose) Cmd {
	ta := [2]C.int{C.int(a[0]), C.int(a[1])}
	tb := [2]C.int{C.int(b[0]), C.int(b[1])}
	return makeCmd("Gemm", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_gemm_forward(&ta[0], &tb[0]) })
}

// Convolution: inputs |x|w|bias (optional)|, output |y|; groups channel
// groups, count filters, kernel the window (kh, kw, c). Stride and padding
// come from the hint.
func Convolution(groups, count int, kernel ...int) Cmd {
	if len(kernel) == 0 || len(kernel) > MaxDims {
		return Cmd{err: invalidError("Convolution", fmt.Sprintf("a kernel has 1 to %d dimensions, not %d", MaxDims, len(kernel)))}
	}
	k := cInts(kernel)
	return makeCmd("Convolution", func() C.ccv_nnc_cmd_t {
		return C.ccv_nnc_cmd_convolution_forward(C.int(groups), C.int(count), C.int(len(kernel)), k)
	})
}

// MaxPool over rows × cols windows (stride and padding from the hint).
func MaxPool(rows, cols int) Cmd {
	return makeCmd("MaxPool", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_max_pool_forward(C.int(rows), C.int(cols)) })
}

// AveragePool over rows × cols windows.
func AveragePool(rows, cols int) Cmd {
	return makeCmd("AveragePool", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_average_pool_forward(C.int(rows), C.int(cols)) })
}

// ReLU is max(x, 0).
func ReLU() Cmd {
	return makeCmd("ReLU", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_relu_forward() })
}

// Sigmoid is 1 / (1 + e^-x).
func Sigmoid() Cmd {
	return makeCmd("Sigmoid", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_sigmoid_forward() })
}

// Tanh is tanh(x).
func Tanh() Cmd {
	return makeCmd("Tanh", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_tanh_forward() })
}

// GELU, exact (erf) or its tanh approximation.
func GELU(tanhApproximation bool) Cmd {
	return makeCmd("GELU", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_gelu_forward(cBool(tanhApproximation)) })
}

// Swish is x · sigmoid(x).
func Swish() Cmd {
	return makeCmd("Swish", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_swish_forward() })
}

// LeakyReLU is x for x ≥ 0, slope·x below.
func LeakyReLU(negativeSlope float32) Cmd {
	return makeCmd("LeakyReLU", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_leaky_relu_forward(C.float(negativeSlope)) })
}

// Softmax over the last axis.
func Softmax() Cmd {
	return makeCmd("Softmax", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_softmax_forward() })
}

// SoftmaxCrossEntropy: inputs |logits|labels (class indices or one-hot)|,
// outputs |loss per row|softmax|.
func SoftmaxCrossEntropy() Cmd { return SoftmaxCrossEntropySmoothed(0, 1) }

// SoftmaxCrossEntropySmoothed is SoftmaxCrossEntropy with label smoothing: a
// 0 label becomes trim0 and a 1 label trim1.
func SoftmaxCrossEntropySmoothed(trim0, trim1 float32) Cmd {
	return makeCmd("SoftmaxCrossEntropy", func() C.ccv_nnc_cmd_t {
		return C.ccv_nnc_cmd_softmax_crossentropy_forward(C.float(trim0), C.float(trim1))
	})
}

// MSE reductions.
const (
	MSEMean = C.CCV_NNC_MSE_REDUCE_MEAN
	MSESum  = C.CCV_NNC_MSE_REDUCE_SUM
)

// MSE: inputs |x|y|, output the loss per row, averaged (MSEMean) or summed
// (MSESum) over the row.
func MSE(reduce int) Cmd {
	return makeCmd("MSE", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_mse_forward(C.int(reduce)) })
}

// EWSum is the element-wise sum of its inputs (same shapes).
func EWSum() Cmd {
	return makeCmd("EWSum", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_ewsum_forward() })
}

// EWProd is the element-wise product of its inputs.
func EWProd() Cmd {
	return makeCmd("EWProd", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_ewprod_forward() })
}

// EWDiv is a / b element-wise.
func EWDiv() Cmd {
	return makeCmd("EWDiv", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_ewdiv_forward() })
}

// EWExp is e^x.
func EWExp() Cmd {
	return makeCmd("EWExp", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_ewexp_forward() })
}

// EWLog is ln x.
func EWLog() Cmd {
	return makeCmd("EWLog", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_ewlog_forward() })
}

// EWSqrt is √x.
func EWSqrt() Cmd {
	return makeCmd("EWSqrt", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_ewsqrt_forward() })
}

// Add is p·a + q·b with broadcasting.
func Add(p, q float32) Cmd {
	return makeCmd("Add", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_add_forward(C.float(p), C.float(q)) })
}

// Mul is p·a·b with broadcasting.
func Mul(p float32) Cmd {
	return makeCmd("Mul", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_mul_forward(C.float(p)) })
}

// ScalarMul is a·x.
func ScalarMul(a float32) Cmd {
	return makeCmd("ScalarMul", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_scalar_mul_forward(C.float(a)) })
}

// BatchNorm: inputs |x|scale|bias|mean|var|, outputs
// |y|mean|var|saved mean|saved inv std|, statistics over the given axes
// (e.g. 0, 1, 2 for NHWC).
func BatchNorm(epsilon float32, isTest bool, momentum float32, axes ...int) Cmd {
	a := cInts(axes)
	return makeCmd("BatchNorm", func() C.ccv_nnc_cmd_t {
		return C.ccv_nnc_cmd_batch_norm_forward(C.float(epsilon), cBool(isTest), C.float(momentum), C.int(len(axes)), a)
	})
}

// LayerNorm over the given axes: inputs |x|scale|bias| (scale and bias with
// elementwiseAffine), outputs |y|saved mean|saved inv std|.
func LayerNorm(epsilon float32, elementwiseAffine bool, axes ...int) Cmd {
	a := cInts(axes)
	return makeCmd("LayerNorm", func() C.ccv_nnc_cmd_t {
		return C.ccv_nnc_cmd_layer_norm_forward(C.float(epsilon), cBool(elementwiseAffine), C.int(len(axes)), a)
	})
}

// SGD: inputs |g|w|momentum|, outputs |w'|momentum'|.
func SGD(nesterov bool, rate, scale, decay, momentum, dampening float32) Cmd {
	return makeCmd("SGD", func() C.ccv_nnc_cmd_t {
		return C.ccv_nnc_cmd_sgd_forward(cBool(nesterov), C.float(rate), C.float(scale), C.float(decay), C.float(momentum), C.float(dampening))
	})
}

// Adam at a 1-based step: inputs |g|w|m|v| (|…|vmax| with amsgrad), outputs
// |w'|m'|v'| (|…|vmax'|).
func Adam(step int, rate, beta1, beta2, decay, epsilon float32, amsgrad bool) Cmd {
	return makeCmd("Adam", func() C.ccv_nnc_cmd_t {
		return C.ccv_nnc_cmd_adam_forward(C.int(step), C.float(rate), C.float(beta1), C.float(beta2), C.float(decay), C.float(epsilon), cBool(amsgrad))
	})
}

// AdamW is Adam with decoupled weight decay.
func AdamW(step int, rate, beta1, beta2, decay, epsilon float32, amsgrad bool) Cmd {
	return makeCmd("AdamW", func() C.ccv_nnc_cmd_t {
		return C.ccv_nnc_cmd_adamw_forward(C.int(step), C.float(rate), C.float(beta1), C.float(beta2), C.float(decay), C.float(epsilon), cBool(amsgrad))
	})
}

// SetValue writes value into every element of its outputs.
func SetValue(value float32) Cmd {
	return makeCmd("SetValue", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_set_forward(C.float(value)) })
}

// DataTransfer copies each input into the output at the same position.
func DataTransfer() Cmd {
	return makeCmd("DataTransfer", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_data_transfer_forward() })
}

// TransposeAxes swaps axes a and b.
func TransposeAxes(a, b int) Cmd {
	return makeCmd("TransposeAxes", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_transpose_forward(C.int(a), C.int(b)) })
}

// ReduceSum sums over the given axes (kept as size 1 in the output).
func ReduceSum(axes ...int) Cmd {
	a := cInts(axes)
	return makeCmd("ReduceSum", func() C.ccv_nnc_cmd_t {
		return C.ccv_nnc_cmd_reduce_sum_forward(C.int(len(axes)), a)
	})
}

// ReduceMean averages over the given axes.
func ReduceMean(axes ...int) Cmd {
	a := cInts(axes)
	return makeCmd("ReduceMean", func() C.ccv_nnc_cmd_t {
		return C.ccv_nnc_cmd_reduce_mean_forward(C.int(len(axes)), a)
	})
}

// CmdByID is any command by its identifier with default (zero) parameters
// and a 1×1×1 window.
func CmdByID(id uint32) Cmd {
	return makeCmd("CmdByID", func() C.ccv_nnc_cmd_t { return C.ccv_nnc_cmd_make(C.uint32_t(id), nil) })
}
