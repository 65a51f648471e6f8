package nnc

/*
#include <stdlib.h>
#include <string.h>
#include <nnc/ccv_nnc.h>

typedef struct {
	int code;
	char* msg; // malloc'd copy of the C message on failure, else NULL
} nncgo_result;

static nncgo_result nncgo_fail(int code)
{
	nncgo_result r = { code, strdup(ccv_nnc_error_message()) };
	return r;
}

// ccv_nnc_cmd_exec with up to four inputs and four outputs passed as
// arguments, so that a call allocates nothing on the Go side, and the message
// read on the thread that failed.
// Every pointer here is C memory (the command and hint boxes, the tensors,
// the stream) passed as an integer, so cgo has no Go pointer to check on the
// call.
static nncgo_result nncgo_exec4(uintptr_t cmd, uintptr_t hint, int flags,
	int ni, uintptr_t i0, uintptr_t i1, uintptr_t i2, uintptr_t i3,
	int no, uintptr_t o0, uintptr_t o1, uintptr_t o2, uintptr_t o3,
	uintptr_t stream)
{
	ccv_nnc_tensor_t* in[4] = { (ccv_nnc_tensor_t*)i0, (ccv_nnc_tensor_t*)i1, (ccv_nnc_tensor_t*)i2, (ccv_nnc_tensor_t*)i3 };
	ccv_nnc_tensor_t* out[4] = { (ccv_nnc_tensor_t*)o0, (ccv_nnc_tensor_t*)o1, (ccv_nnc_tensor_t*)o2, (ccv_nnc_tensor_t*)o3 };
	int code = ccv_nnc_cmd_exec_p((const ccv_nnc_cmd_t*)cmd, (const ccv_nnc_hint_t*)hint, flags, in, ni, out, no, (ccv_nnc_stream_context_t*)stream);
	if (code != CCV_NNC_EXEC_SUCCESS)
		return nncgo_fail(code);
	nncgo_result r = { 0, NULL };
	return r;
}

static nncgo_result nncgo_exec(const ccv_nnc_cmd_t* cmd, const ccv_nnc_hint_t* hint, int flags,
	ccv_nnc_tensor_t** in, int ni, ccv_nnc_tensor_t** out, int no, ccv_nnc_stream_context_t* stream)
{
	int code = ccv_nnc_cmd_exec_p(cmd, hint, flags, in, ni, out, no, stream);
	if (code != CCV_NNC_EXEC_SUCCESS)
		return nncgo_fail(code);
	nncgo_result r = { 0, NULL };
	return r;
}

static uint32_t nncgo_cmd_id(const ccv_nnc_cmd_t* cmd) { return cmd->cmd; }
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Cmd is a command: an operation with its parameters. Make one with a builder
// (Gemm, Convolution, ReLU, …) and run it with Exec. A Cmd is a value; copy
// it freely.
type Cmd struct {
	b   *cmdBox // the C command, on the Go heap once so that calls copy nothing
	err error   // a builder's refusal, returned by Exec
}

// cmdBox holds a command in C memory, freed by a finalizer when no Cmd value
// refers to it. C memory rather than Go memory: cgo then has no Go object to
// scan for pointers on each call.
type cmdBox struct{ c *C.ccv_nnc_cmd_t }

func newCmdBox(c C.ccv_nnc_cmd_t) *cmdBox {
	b := &cmdBox{c: (*C.ccv_nnc_cmd_t)(C.malloc(C.size_t(unsafe.Sizeof(c))))}
	*b.c = c
	runtime.SetFinalizer(b, func(b *cmdBox) { C.free(unsafe.Pointer(b.c)) })
	return b
}

var noopBox = newCmdBox(C.ccv_nnc_cmd_t{})

// native is the C command (NOOP for the zero Cmd). C only reads it; keep the
// Cmd alive (runtime.KeepAlive(cmd.b)) until the call has returned.
func (c Cmd) native() *C.ccv_nnc_cmd_t {
	if c.b == nil {
		return noopBox.c
	}
	return c.b.c
}

// Backend identifiers for Cmd.WithBackend.
const (
	BackendAuto   uint32 = 0
	BackendCPURef uint32 = C.CCV_NNC_BACKEND_CPU_REF
	BackendCPUOpt uint32 = C.CCV_NNC_BACKEND_CPU_OPT
)

// Err is the builder's error for a command made from bad arguments (Exec
// returns it too), or nil.
func (c Cmd) Err() error { return c.err }

// ID is the command's identifier (CCV_NNC_…_FORWARD / _BACKWARD).
func (c Cmd) ID() uint32 { return uint32(c.native().cmd) }

// Name is the command's name, "CCV_NNC_GEMM_FORWARD" for GEMM.
func (c Cmd) Name() string {
	id := c.native().cmd
	p := C.ccv_nnc_cmd_name(id)
	if p == nil {
		return fmt.Sprintf("command %#x", uint32(id))
	}
	return C.GoString(p)
}

// WithBackend returns the command pinned to a backend (BackendCPURef, …);
// BackendAuto lets each Exec choose.
func (c Cmd) WithBackend(backend uint32) Cmd {
	cc := *c.native()
	runtime.KeepAlive(c.b)
	cc.backend = C.uint32_t(backend)
	c.b = newCmdBox(cc)
	return c
}

// Backward is the backward command of a forward one, with the same
// parameters. Its inputs are the gradients of the forward outputs, then the
// forward inputs, then the forward outputs; its outputs the gradients of the
// forward inputs (nil where not wanted).
func (c Cmd) Backward() Cmd {
	if c.err != nil {
		return c
	}
	params := c.native().info
	id := c.native().cmd
	runtime.KeepAlive(c.b)
	return makeCmd("Backward", func() C.ccv_nnc_cmd_t {
		return C.ccv_nnc_cmd_make(id|1, &params)
	})
}

// makeCmd runs a C constructor on a locked thread and keeps its message if it
// refused (a command whose id is 0).
func makeCmd(op string, f func() C.ccv_nnc_cmd_t) Cmd {
	var c C.ccv_nnc_cmd_t
	err := cCall(op, func() int {
		c = f()
		if c.cmd == 0 {
			return CodeInvalid
		}
		return 0
	})
	return Cmd{b: newCmdBox(c), err: err}
}

// Hint is the stride and padding of a windowed command (convolution,
// pooling). NoHint lets the command derive them from the shapes.
type Hint struct {
	b   *hintBox // nil: no hint
	err error
}

// hintBox holds a hint in C memory (as cmdBox).
type hintBox struct{ c *C.ccv_nnc_hint_t }

func newHintBox(h C.ccv_nnc_hint_t) *hintBox {
	b := &hintBox{c: (*C.ccv_nnc_hint_t)(C.malloc(C.size_t(unsafe.Sizeof(h))))}
	*b.c = h
	runtime.SetFinalizer(b, func(b *hintBox) { C.free(unsafe.Pointer(b.c)) })
	return b
}

// native is the C hint, or NULL for NoHint (keep h.b alive over the call).
func (h Hint) native() *C.ccv_nnc_hint_t {
	if h.b == nil {
		return nil
	}
	return h.b.c
}

// value is the C hint by value (all zero for NoHint).
func (h Hint) value() C.ccv_nnc_hint_t {
	if h.b == nil {
		return C.ccv_nnc_hint_t{}
	}
	v := *h.b.c
	runtime.KeepAlive(h.b)
	return v
}

// NoHint is the empty hint.
var NoHint Hint

// NewHint makes a hint from per-spatial-dimension strides and paddings
// (borderBegin / borderEnd may be nil for no padding).
func NewHint(stride, borderBegin, borderEnd []int) (Hint, error) {
	rank := len(stride)
	if (borderBegin != nil && len(borderBegin) != rank) || (borderEnd != nil && len(borderEnd) != rank) {
		return NoHint, invalidError("NewHint", "stride, borderBegin and borderEnd need the same length")
	}
	// Room for one more than C accepts, so that C sees (and refuses) a rank too high.
	var s, b, e [MaxDims + 1]C.int
	for i := 0; i < rank && i <= MaxDims; i++ {
		s[i] = C.int(stride[i])
		if borderBegin != nil {
			b[i] = C.int(borderBegin[i])
		}
		if borderEnd != nil {
			e[i] = C.int(borderEnd[i])
		}
	}
	var h C.ccv_nnc_hint_t
	err := cCall("NewHint", func() int {
		h = C.ccv_nnc_hint_make(C.int(rank), &s[0], &b[0], &e[0])
		return voidFailed()
	})
	if err != nil {
		return NoHint, err
	}
	return Hint{b: newHintBox(h)}, nil
}

// AutoHint derives the stride and symmetric padding that take input's shape
// to output's under cmd's window.
func AutoHint(cmd Cmd, input, output *Tensor) (Hint, error) {
	a, ok1 := input.info()
	b, ok2 := output.info()
	if !ok1 || !ok2 {
		return NoHint, closedError("AutoHint")
	}
	var h C.ccv_nnc_hint_t
	err := cCall("AutoHint", func() int {
		h = C.ccv_nnc_hint_auto_p(cmd.native(), &a, &b)
		return voidFailed()
	})
	runtime.KeepAlive(cmd.b)
	if err != nil {
		return NoHint, err
	}
	return Hint{b: newHintBox(h)}, nil
}

// tensorPtr is t's C tensor, NULL for a nil t (an empty slot); ok is false
// for a closed tensor.
func tensorPtr(t *Tensor) (p *C.ccv_nnc_tensor_t, ok bool) {
	if t == nil {
		return nil, true
	}
	return t.p, t.p != nil
}

func resultError(op string, r C.nncgo_result) error {
	if r.code == 0 {
		return nil
	}
	msg := ""
	if r.msg != nil {
		msg = C.GoString(r.msg)
		C.free(unsafe.Pointer(r.msg))
	}
	return &Error{Code: int(r.code), Op: op, Message: msg}
}

// Exec runs cmd on inputs, writing outputs, and returns when it is done. A nil
// tensor is an empty slot (C NULL).
func Exec(cmd Cmd, hint Hint, inputs, outputs []*Tensor) error {
	return execOn(cmd, hint, 0, inputs, outputs, nil)
}

// ExecFlags is Exec with the C flags (CCV_NNC_ZERO_MEMORY_ALLOC, …).
func ExecFlags(cmd Cmd, hint Hint, flags int, inputs, outputs []*Tensor) error {
	return execOn(cmd, hint, flags, inputs, outputs, nil)
}

func uptr(p *C.ccv_nnc_tensor_t) C.uintptr_t { return C.uintptr_t(uintptr(unsafe.Pointer(p))) }

func execOn(cmd Cmd, hint Hint, flags int, inputs, outputs []*Tensor, s *C.ccv_nnc_stream_context_t) error {
	if cmd.err != nil {
		return cmd.err
	}
	if hint.err != nil {
		return hint.err
	}
	var r C.nncgo_result
	if len(inputs) <= 4 && len(outputs) <= 4 {
		var in, out [4]C.uintptr_t
		for i, t := range inputs {
			p, ok := tensorPtr(t)
			if !ok {
				return closedError(cmdOp(cmd))
			}
			in[i] = uptr(p)
		}
		for i, t := range outputs {
			p, ok := tensorPtr(t)
			if !ok {
				return closedError(cmdOp(cmd))
			}
			out[i] = uptr(p)
		}
		r = C.nncgo_exec4(C.uintptr_t(uintptr(unsafe.Pointer(cmd.native()))), C.uintptr_t(uintptr(unsafe.Pointer(hint.native()))), C.int(flags),
			C.int(len(inputs)), in[0], in[1], in[2], in[3],
			C.int(len(outputs)), out[0], out[1], out[2], out[3], C.uintptr_t(uintptr(unsafe.Pointer(s))))
	} else {
		// C memory for the pointer arrays: cgo lets C keep no Go pointers,
		// and this keeps the rule obvious.
		n := len(inputs) + len(outputs)
		arr := (*[1 << 20]*C.ccv_nnc_tensor_t)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof((*C.ccv_nnc_tensor_t)(nil)))))[:n:n]
		defer C.free(unsafe.Pointer(&arr[0]))
		for i, t := range append(append([]*Tensor{}, inputs...), outputs...) {
			p, ok := tensorPtr(t)
			if !ok {
				return closedError(cmdOp(cmd))
			}
			arr[i] = p
		}
		var inPtr, outPtr **C.ccv_nnc_tensor_t
		if len(inputs) > 0 {
			inPtr = &arr[0]
		}
		if len(outputs) > 0 {
			outPtr = &arr[len(inputs)]
		}
		r = C.nncgo_exec(cmd.native(), hint.native(), C.int(flags), inPtr, C.int(len(inputs)), outPtr, C.int(len(outputs)), s)
	}
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(outputs)
	runtime.KeepAlive(cmd.b)
	runtime.KeepAlive(hint.b)
	if r.code != 0 {
		return resultError(cmdOp(cmd), r)
	}
	return nil
}

func cmdOp(cmd Cmd) string {
	n := cmd.Name()
	if len(n) > 8 && n[:8] == "CCV_NNC_" {
		return n[8:]
	}
	return n
}
