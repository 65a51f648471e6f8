package nnc

/*
#include <nnc/ccv_nnc.h>
*/
import "C"

import (
	"runtime"
	"sync"
)

// Stream is a CPU stream: commands queued on it run in order on a thread of
// its own, asynchronously to the caller. Tensors given to a queued command
// must stay open until Wait returns (the stream keeps them reachable until
// then, so a finalizer cannot free them early).
type Stream struct {
	mu      sync.Mutex
	p       *C.ccv_nnc_stream_context_t
	pending [][]*Tensor
}

// NewStream makes a CPU stream.
func NewStream() (*Stream, error) {
	var p *C.ccv_nnc_stream_context_t
	err := cCall("NewStream", func() int {
		p = C.ccv_nnc_stream_context_new(C.CCV_STREAM_CONTEXT_CPU)
		if p == nil {
			return CodeInvalid
		}
		return 0
	})
	if err != nil {
		return nil, err
	}
	s := &Stream{p: p}
	runtime.SetFinalizer(s, (*Stream).Close)
	return s, nil
}

// Exec queues cmd on the stream. Errors found when queuing are returned now;
// errors while running are returned by Wait.
func (s *Stream) Exec(cmd Cmd, hint Hint, inputs, outputs []*Tensor) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return closedError("Stream.Exec")
	}
	s.pending = append(s.pending, inputs, outputs)
	return execOn(cmd, hint, 0, inputs, outputs, s.p)
}

// Wait blocks until everything queued has run, and returns the first failure
// of a queued command, if any. The stream then runs what is queued next.
func (s *Stream) Wait() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return closedError("Stream.Wait")
	}
	err := cCall("Stream.Wait", func() int {
		C.ccv_nnc_stream_context_wait(s.p)
		code := voidFailed()
		if code != 0 {
			// The failure is this error now: taken from the stream, so the C
			// library does not also return it from the next Exec.
			C.ccv_nnc_stream_context_error(s.p)
		}
		return code
	})
	s.pending = nil
	runtime.KeepAlive(s)
	return err
}

// Close waits for the stream and frees it. Calling it again does nothing.
func (s *Stream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p == nil {
		return nil
	}
	runtime.SetFinalizer(s, nil)
	C.ccv_nnc_stream_context_free(s.p)
	s.p = nil
	s.pending = nil
	return nil
}
