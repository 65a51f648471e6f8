package nnc

/*
#include <stdlib.h>
#include <string.h>
#include <nnc/ccv_nnc.h>

static ccv_nnc_tensor_param_t nncgo_params(int datatype, int format, const int* dim, int nd)
{
	ccv_nnc_tensor_param_t p;
	memset(&p, 0, sizeof(p));
	p.type = CCV_TENSOR_CPU_MEMORY;
	p.format = format;
	p.datatype = datatype;
	for (int i = 0; i < nd && i < CCV_NNC_MAX_DIM_ALLOC; i++)
		p.dim[i] = dim[i];
	return p;
}

static void* nncgo_data(ccv_nnc_tensor_t* t) { return t->data.ptr; }
static int nncgo_is_view(ccv_nnc_tensor_t* t) { return CCV_IS_TENSOR_VIEW(t) ? 1 : 0; }
static int nncgo_contiguous(ccv_nnc_tensor_t* t) { return CCV_IS_TENSOR_CONTIGUOUS(t) ? 1 : 0; }
static const int* nncgo_view_stride(ccv_nnc_tensor_t* t) { return ((ccv_nnc_tensor_view_t*)t)->stride; }
static void nncgo_free(ccv_nnc_tensor_t* t)
{
	if (CCV_IS_TENSOR_VIEW(t))
		ccv_nnc_tensor_view_free((ccv_nnc_tensor_view_t*)t);
	else
		ccv_nnc_tensor_free(t);
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// DataType is a tensor's element type.
type DataType int

// Element types (the C library's CCV_32F, …).
const (
	Float32  DataType = C.CCV_32F
	Float64  DataType = C.CCV_64F
	Float16  DataType = C.CCV_16F
	BFloat16 DataType = C.CCV_16BF
	Int32    DataType = C.CCV_32S
	Int64    DataType = C.CCV_64S
	UInt8    DataType = C.CCV_8U
)

func (d DataType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Float16:
		return "float16"
	case BFloat16:
		return "bfloat16"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case UInt8:
		return "uint8"
	}
	return fmt.Sprintf("DataType(%#x)", int(d))
}

// Size is the element size in bytes (0 for an unknown type).
func (d DataType) Size() int {
	switch d {
	case Float32, Int32:
		return 4
	case Float64, Int64:
		return 8
	case Float16, BFloat16:
		return 2
	case UInt8:
		return 1
	}
	return 0
}

// Format is a tensor's memory layout.
type Format int

// Layouts.
const (
	NHWC Format = C.CCV_TENSOR_FORMAT_NHWC
	NCHW Format = C.CCV_TENSOR_FORMAT_NCHW
	CHWN Format = C.CCV_TENSOR_FORMAT_CHWN
)

// MaxDims is the most dimensions a tensor can have.
const MaxDims = C.CCV_NNC_MAX_DIM_ALLOC

// storage is the C tensor a Tensor and its views share. It is freed when the
// last Tensor referring to it is closed, so closing a tensor while views of it
// are open leaves the views valid.
type storage struct {
	mu   sync.Mutex
	p    *C.ccv_nnc_tensor_t
	refs int
}

func (s *storage) release() {
	s.mu.Lock()
	s.refs--
	if s.refs == 0 && s.p != nil {
		C.nncgo_free(s.p)
		s.p = nil
	}
	s.mu.Unlock()
}

// Tensor is an NNC tensor or a view into one. Its data lives in C memory.
//
// Aliasing rule: Float32s / Float64s (and the other typed accessors) return a
// Go slice over the tensor's own C memory, without a copy. Writes through the
// slice are the tensor's contents, and commands writing the tensor change
// what the slice reads. The slice is valid until the tensor (and every view of
// it) is closed; using it after that is a use-after-free the Go runtime
// cannot detect, so keep the slice no longer than the tensor. From* and Copy*
// functions copy, and have no such rule.
type Tensor struct {
	p      *C.ccv_nnc_tensor_t // nil once closed
	st     *storage            // the base tensor's storage (shared with views)
	isView bool
}

func newTensorObject(p *C.ccv_nnc_tensor_t, st *storage, isView bool) *Tensor {
	t := &Tensor{p: p, st: st, isView: isView}
	runtime.SetFinalizer(t, (*Tensor).Close)
	return t
}

func shapeParams(op string, dt DataType, f Format, shape []int) (C.ccv_nnc_tensor_param_t, error) {
	var p C.ccv_nnc_tensor_param_t
	if len(shape) == 0 || len(shape) > MaxDims {
		return p, invalidError(op, fmt.Sprintf("a tensor has 1 to %d dimensions, not %d", MaxDims, len(shape)))
	}
	var dim [MaxDims]C.int
	for i, d := range shape {
		if d <= 0 || d > 1<<31-1 {
			return p, invalidError(op, fmt.Sprintf("dimension %d is %d; dimensions are positive", i, d))
		}
		dim[i] = C.int(d)
	}
	return C.nncgo_params(C.int(dt), C.int(f), &dim[0], C.int(len(shape))), nil
}

// NewTensor allocates a CPU tensor (uninitialised) of the given type, layout
// and shape, outermost dimension first.
func NewTensor(dt DataType, f Format, shape ...int) (*Tensor, error) {
	params, err := shapeParams("NewTensor", dt, f, shape)
	if err != nil {
		return nil, err
	}
	var p *C.ccv_nnc_tensor_t
	err = cCall("NewTensor", func() int {
		p = C.ccv_nnc_tensor_new(nil, params, 0)
		if p == nil {
			return CodeInvalid
		}
		return 0
	})
	if err != nil {
		return nil, err
	}
	return newTensorObject(p, &storage{p: p, refs: 1}, false), nil
}

// FromFloat32 makes an NHWC float32 tensor of the given shape holding a copy
// of data (len(data) must be the product of the shape).
func FromFloat32(data []float32, shape ...int) (*Tensor, error) {
	t, err := NewTensor(Float32, NHWC, shape...)
	if err != nil {
		return nil, err
	}
	if err := t.SetFloat32s(data); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// FromFloat64 makes an NHWC float64 tensor of the given shape holding a copy
// of data.
func FromFloat64(data []float64, shape ...int) (*Tensor, error) {
	t, err := NewTensor(Float64, NHWC, shape...)
	if err != nil {
		return nil, err
	}
	if err := t.SetFloat64s(data); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// FromInt32 makes an NHWC int32 tensor of the given shape holding a copy of
// data (class labels, indices).
func FromInt32(data []int32, shape ...int) (*Tensor, error) {
	t, err := NewTensor(Int32, NHWC, shape...)
	if err != nil {
		return nil, err
	}
	dst, err := t.Int32s()
	if err == nil && len(dst) != len(data) {
		err = invalidError("FromInt32", fmt.Sprintf("%d values for a tensor of %d elements", len(data), len(dst)))
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	copy(dst, data)
	runtime.KeepAlive(t)
	return t, nil
}

// Close frees the tensor (a view: the view; the data goes when the tensor and
// all its views are closed). Calling it again does nothing.
func (t *Tensor) Close() error {
	if t == nil || t.p == nil {
		return nil
	}
	runtime.SetFinalizer(t, nil)
	if t.isView {
		C.nncgo_free(t.p)
	}
	t.p = nil
	t.st.release()
	return nil
}

// handle is the C tensor, or an error if the tensor was closed.
func (t *Tensor) handle(op string) (*C.ccv_nnc_tensor_t, error) {
	if t == nil || t.p == nil {
		return nil, closedError(op)
	}
	return t.p, nil
}

// Closed reports whether Close has been called.
func (t *Tensor) Closed() bool { return t == nil || t.p == nil }

func (t *Tensor) info() (C.ccv_nnc_tensor_param_t, bool) {
	if t == nil || t.p == nil {
		return C.ccv_nnc_tensor_param_t{}, false
	}
	info := t.p.info
	runtime.KeepAlive(t)
	return info, true
}

// Shape is the tensor's dimensions, outermost first (nil once closed).
func (t *Tensor) Shape() []int {
	info, ok := t.info()
	if !ok {
		return nil
	}
	var s []int
	for _, d := range info.dim {
		if d == 0 {
			break
		}
		s = append(s, int(d))
	}
	return s
}

// DataType is the element type.
func (t *Tensor) DataType() DataType {
	info, _ := t.info()
	return DataType(info.datatype)
}

// Format is the layout.
func (t *Tensor) Format() Format {
	info, _ := t.info()
	return Format(info.format)
}

// Len is the number of elements (0 once closed).
func (t *Tensor) Len() int {
	s := t.Shape()
	if s == nil {
		return 0
	}
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// IsView reports whether the tensor is a view into another.
func (t *Tensor) IsView() bool { return t.isView }

// String describes the tensor ("Tensor(float32 NHWC [2 3])").
func (t *Tensor) String() string {
	if t.Closed() {
		return "Tensor(closed)"
	}
	f := map[Format]string{NHWC: "NHWC", NCHW: "NCHW", CHWN: "CHWN"}[t.Format()]
	v := ""
	if t.isView {
		v = " view"
	}
	return fmt.Sprintf("Tensor(%v %s %v%s)", t.DataType(), f, t.Shape(), v)
}

// packed returns the tensor's data pointer and element count for the typed
// accessors, refusing a type mismatch and strided views.
func (t *Tensor) packed(op string, dt DataType) (unsafe.Pointer, int, error) {
	p, err := t.handle(op)
	if err != nil {
		return nil, 0, err
	}
	if DataType(p.info.datatype) != dt {
		return nil, 0, invalidError(op, fmt.Sprintf("the tensor holds %v, not %v", DataType(p.info.datatype), dt))
	}
	if C.nncgo_contiguous(p) == 0 {
		return nil, 0, invalidError(op, "a strided view has no flat slice; copy it with CopyFloat32s / CopyFloat64s")
	}
	data := C.nncgo_data(p)
	runtime.KeepAlive(t)
	return data, t.Len(), nil
}

// Float32s is the float32 tensor's data as a slice over its C memory, no
// copy (see the aliasing rule on Tensor). Refused for other types and for
// strided views.
func (t *Tensor) Float32s() ([]float32, error) {
	d, n, err := t.packed("Float32s", Float32)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*float32)(d), n), nil
}

// Float64s is the float64 tensor's data as a slice over its C memory.
func (t *Tensor) Float64s() ([]float64, error) {
	d, n, err := t.packed("Float64s", Float64)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*float64)(d), n), nil
}

// Int32s is the int32 tensor's data as a slice over its C memory.
func (t *Tensor) Int32s() ([]int32, error) {
	d, n, err := t.packed("Int32s", Int32)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*int32)(d), n), nil
}

// SetFloat32s copies data into the tensor (views too), converting to its
// element type.
func (t *Tensor) SetFloat32s(data []float32) error {
	return t.transfer("SetFloat32s", Float32, sliceData(data), len(data), true)
}

// SetFloat64s copies data into the tensor (views too), converting.
func (t *Tensor) SetFloat64s(data []float64) error {
	return t.transfer("SetFloat64s", Float64, sliceData(data), len(data), true)
}

// CopyFloat32s returns a copy of the tensor's elements in row-major order as
// float32 (views too; any element type, converted).
func (t *Tensor) CopyFloat32s() ([]float32, error) {
	out := make([]float32, t.Len())
	if err := t.transfer("CopyFloat32s", Float32, sliceData(out), len(out), false); err != nil {
		return nil, err
	}
	return out, nil
}

// CopyFloat64s returns a copy of the tensor's elements in row-major order as
// float64 (views too; any element type, converted).
func (t *Tensor) CopyFloat64s() ([]float64, error) {
	out := make([]float64, t.Len())
	if err := t.transfer("CopyFloat64s", Float64, sliceData(out), len(out), false); err != nil {
		return nil, err
	}
	return out, nil
}

// transfer copies n packed elements of type dt between Go memory and the
// tensor (in: into the tensor), views included; the C side reads or writes
// the Go memory only during the call.
func (t *Tensor) transfer(op string, dt DataType, goMem unsafe.Pointer, n int, in bool) error {
	p, err := t.handle(op)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(t)
	if n != t.Len() {
		return invalidError(op, fmt.Sprintf("%d values for a tensor of %d elements", n, t.Len()))
	}
	if n == 0 {
		return nil
	}
	return cCall(op, func() int {
		if in {
			return int(C.ccv_nnc_tensor_copy_from(p, goMem, C.int(dt), C.size_t(n)))
		}
		return int(C.ccv_nnc_tensor_copy_to(p, goMem, C.int(dt), C.size_t(n)))
	})
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// View makes a window into t: shape is the view's shape, offset where it starts
// (per dimension, in elements); stride the elements between neighbours along
// each dimension — nil for t's own row lengths (same number of dimensions as
// t). The view shares t's data; it stays valid after t is closed.
func (t *Tensor) View(offset, shape, stride []int) (*Tensor, error) {
	const op = "View"
	p, err := t.handle(op)
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(t)
	params, err := shapeParams(op, DataType(p.info.datatype), Format(p.info.format), shape)
	if err != nil {
		return nil, err
	}
	if len(offset) != len(shape) || (stride != nil && len(stride) != len(shape)) {
		return nil, invalidError(op, "offset and stride need one entry per dimension of the view")
	}
	base := t.Shape()
	var ofs, str [MaxDims]C.int
	for i, o := range offset {
		ofs[i] = C.int(o)
	}
	if stride == nil {
		if len(base) != len(shape) {
			return nil, invalidError(op, "give the strides of a view with a different number of dimensions")
		}
		if t.isView {
			s := unsafe.Slice(C.nncgo_view_stride(p), MaxDims)
			copy(str[:], s)
		} else {
			acc := 1
			for i := len(base) - 1; i >= 0; i-- {
				str[i] = C.int(acc)
				acc *= base[i]
			}
		}
	} else {
		for i, s := range stride {
			str[i] = C.int(s)
		}
	}
	var v *C.ccv_nnc_tensor_view_t
	err = cCall(op, func() int {
		v = C.ccv_nnc_tensor_view_new(p, params, &ofs[0], &str[0])
		if v == nil {
			return CodeInvalid
		}
		return 0
	})
	if err != nil {
		return nil, err
	}
	t.st.mu.Lock()
	t.st.refs++
	t.st.mu.Unlock()
	return newTensorObject((*C.ccv_nnc_tensor_t)(unsafe.Pointer(v)), t.st, true), nil
}

// Zero sets every element to zero.
func (t *Tensor) Zero() error {
	p, err := t.handle("Zero")
	if err != nil {
		return err
	}
	C.ccv_nnc_tensor_zero(unsafe.Pointer(p))
	runtime.KeepAlive(t)
	return nil
}

func sliceData[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}
