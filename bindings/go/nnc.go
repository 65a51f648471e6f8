// Package nnc is the Go binding of NNC, a neural-network library behind a
// plain-C API (ccv_nnc_*).
//
// Every object that holds C memory (Tensor, Stream, Graph, Variable, Model)
// has a Close method. Close is the contract: call it when done (defer
// t.Close()). It is idempotent, and an object used after Close returns an
// error wrapping ErrClosed rather than touching freed memory. A finalizer frees
// what was not closed, as a backstop only: the Go collector does not see the C
// memory, so relying on it lets memory grow.
//
// A handle is not safe for concurrent use by several goroutines (as with the
// C objects beneath); separate handles may be used from separate goroutines.
//
// Errors are *Error values carrying the C code and the C library's message.
// Match them with errors.Is against ErrInvalid, ErrNoKernel, ErrOOM or
// ErrClosed:
//
//	if err := nnc.Exec(nnc.Gemm(false, true), nnc.NoHint, []*nnc.Tensor{x, w}, []*nnc.Tensor{y}); errors.Is(err, nnc.ErrInvalid) {
//		log.Print(err) // "nnc: GEMM_FORWARD: invalid: <the C library's message>"
//	}
package nnc

/*
#include <nnc/ccv_nnc.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
)

var initOnce sync.Once

func ensureInit() {
	initOnce.Do(func() {
		C.ccv_nnc_init()
		if err := checkABI(); err != nil {
			// A library built from other headers would corrupt memory: stop here.
			panic(err)
		}
	})
}

// checkABI compares the library's ABI version and struct sizes with the
// headers this package was compiled against.
func checkABI() error {
	if v := int(C.ccv_nnc_abi_version()); v != ABIVersionExpected {
		return fmt.Errorf("nnc: the C library's ABI version is %d, this binding's %d", v, ABIVersionExpected)
	}
	sizes := []struct {
		id   C.int
		name string
		size uintptr
	}{
		{C.CCV_NNC_TYPE_TENSOR_PARAM, "ccv_nnc_tensor_param_t", C.sizeof_ccv_nnc_tensor_param_t},
		{C.CCV_NNC_TYPE_CMD_PARAM, "ccv_nnc_cmd_param_t", C.sizeof_ccv_nnc_cmd_param_t},
		{C.CCV_NNC_TYPE_CMD, "ccv_nnc_cmd_t", C.sizeof_ccv_nnc_cmd_t},
		{C.CCV_NNC_TYPE_HINT, "ccv_nnc_hint_t", C.sizeof_ccv_nnc_hint_t},
		{C.CCV_NNC_TYPE_TENSOR, "ccv_nnc_tensor_t", C.sizeof_ccv_nnc_tensor_t},
		{C.CCV_NNC_TYPE_TENSOR_VIEW, "ccv_nnc_tensor_view_t", C.sizeof_ccv_nnc_tensor_view_t},
		{C.CCV_NNC_TYPE_EVALUATE_PARAM, "ccv_cnnp_evaluate_param_t", C.sizeof_ccv_cnnp_evaluate_param_t},
	}
	for _, s := range sizes {
		if n := uintptr(C.ccv_nnc_type_size(s.id)); n != s.size {
			return fmt.Errorf("nnc: %s is %d bytes in the C library, %d in the headers this binding was built with", s.name, n, s.size)
		}
	}
	return nil
}

func init() { ensureInit() }

// Version is the C library's version, "MAJOR.MINOR.PATCH".
func Version() string { return C.GoString(C.ccv_nnc_version()) }

// Result codes of the C API.
const (
	CodeSuccess  = 0
	CodeInvalid  = -1
	CodeNoKernel = -2
	CodeOOM      = -3
)

// Error is an error reported by the C library: its code (CodeInvalid,
// CodeNoKernel, CodeOOM) and the message ccv_nnc_error_message gave on the
// thread that made the call.
type Error struct {
	Code    int    // a negative CCV_NNC_EXEC_* code
	Op      string // what the binding was doing
	Message string // the C library's message

	closed bool
}

// Sentinels for errors.Is.
var (
	ErrInvalid  = &Error{Code: CodeInvalid, Message: "invalid argument"}
	ErrNoKernel = &Error{Code: CodeNoKernel, Message: "no kernel"}
	ErrOOM      = &Error{Code: CodeOOM, Message: "out of memory"}
	// ErrClosed matches the error from using an object after Close. It also
	// matches ErrInvalid.
	ErrClosed = &Error{Code: CodeInvalid, Message: "use of a closed object", closed: true}
)

func codeName(code int) string {
	switch code {
	case CodeInvalid:
		return "invalid"
	case CodeNoKernel:
		return "no kernel"
	case CodeOOM:
		return "out of memory"
	}
	return fmt.Sprintf("code %d", code)
}

func (e *Error) Error() string {
	op := ""
	if e.Op != "" {
		op = e.Op + ": "
	}
	if e.Message == "" {
		return "nnc: " + op + codeName(e.Code)
	}
	return "nnc: " + op + codeName(e.Code) + ": " + e.Message
}

// Is reports whether target is the sentinel of e's code (ErrInvalid,
// ErrNoKernel, ErrOOM), or ErrClosed for an error about a closed object.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	if t == ErrClosed {
		return e.closed
	}
	if t == ErrInvalid || t == ErrNoKernel || t == ErrOOM {
		return e.Code == t.Code
	}
	return e == t
}

func closedError(op string) error {
	return &Error{Code: CodeInvalid, Op: op, Message: "use of a closed object", closed: true}
}

func invalidError(op, msg string) error {
	return &Error{Code: CodeInvalid, Op: op, Message: msg}
}

// lastError builds the error for a failed C call. It must run on the OS thread
// that made the call (the C message is thread-local): callers hold
// runtime.LockOSThread across both.
func lastError(op string, code int) error {
	if code >= 0 {
		code = CodeInvalid
	}
	msg := C.GoString(C.ccv_nnc_error_message())
	return &Error{Code: code, Op: op, Message: msg}
}

// cCall runs f with the goroutine locked to its OS thread, with the thread's C
// error message cleared first, so that a failure's message can be read after.
// f returns 0 on success or a negative code; for functions returning void or
// a pointer, f turns that into a code itself (see failed).
func cCall(op string, f func() int) error {
	runtime.LockOSThread()
	C.ccv_nnc_error_clear()
	code := f()
	var err error
	if code != 0 {
		err = lastError(op, code)
	}
	runtime.UnlockOSThread()
	return err
}

// voidFailed reports whether a void C call failed: it left a message.
// Call inside cCall.
func voidFailed() int {
	if *C.ccv_nnc_error_message() != 0 {
		return CodeInvalid
	}
	return 0
}

// LiveKind names a kind of C object for LiveObjects (CCV_NNC_LIVE_*).
type LiveKind int

// Kinds of live object.
const (
	LiveAll            LiveKind = -1
	LiveTensor         LiveKind = C.CCV_NNC_LIVE_TENSOR
	LiveStream         LiveKind = C.CCV_NNC_LIVE_STREAM_CONTEXT
	LiveGraph          LiveKind = C.CCV_NNC_LIVE_GRAPH
	LiveDynamicGraph   LiveKind = C.CCV_NNC_LIVE_DYNAMIC_GRAPH
	LiveTensorVariable LiveKind = C.CCV_NNC_LIVE_TENSOR_VARIABLE
	LiveModel          LiveKind = C.CCV_NNC_LIVE_MODEL
)

// LiveObjects is the number of C objects of a kind alive in the process (all
// threads, whoever made them); LiveAll sums every kind. For leak checks.
func LiveObjects(kind LiveKind) int64 {
	return int64(C.ccv_nnc_live_object_count(C.int(kind)))
}

// ABIVersion is the C library's bindings ABI version; the binding was written
// for ABIVersionExpected.
func ABIVersion() int { return int(C.ccv_nnc_abi_version()) }

// ABIVersionExpected is the ABI version this binding was written for.
const ABIVersionExpected = 1

// Must returns v, or panics with err: for examples and programs that treat a
// failure as fatal, as in nnc.Must(nnc.DenseLayer(16, false)).
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
