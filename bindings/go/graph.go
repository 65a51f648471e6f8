package nnc

/*
#include <nnc/ccv_nnc.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Graph is a dynamic graph: commands on its variables run at once and are
// traced, so that Backward and Minimize can differentiate them. Its methods
// and its variables' methods are serialised by the graph's lock.
type Graph struct {
	mu sync.Mutex
	p  *C.ccv_nnc_dynamic_graph_t
}

// Variable is a tensor variable of a Graph. Close frees it (a traced command
// may keep its value until no backward can need it).
type Variable struct {
	g *Graph
	v C.ccv_nnc_tensor_variable_t
}

// NewGraph makes an empty dynamic graph.
func NewGraph() (*Graph, error) {
	var p *C.ccv_nnc_dynamic_graph_t
	err := cCall("NewGraph", func() int {
		p = C.ccv_nnc_dynamic_graph_new()
		if p == nil {
			return CodeInvalid
		}
		return 0
	})
	if err != nil {
		return nil, err
	}
	g := &Graph{p: p}
	runtime.SetFinalizer(g, (*Graph).Close)
	return g, nil
}

// Close frees the graph and every variable of it (their Close then does
// nothing). Calling it again does nothing.
func (g *Graph) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.p == nil {
		return nil
	}
	runtime.SetFinalizer(g, nil)
	C.ccv_nnc_dynamic_graph_free(g.p)
	g.p = nil
	return nil
}

func (g *Graph) newVar(op string, params C.ccv_nnc_tensor_param_t, constant bool) (*Variable, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.p == nil {
		return nil, closedError(op)
	}
	var v C.ccv_nnc_tensor_variable_t
	err := cCall(op, func() int {
		if constant {
			v = C.ccv_nnc_tensor_constant_new_impl(g.p, params)
		} else {
			v = C.ccv_nnc_tensor_variable_new_impl(g.p, params)
		}
		if v == nil {
			return CodeInvalid
		}
		return 0
	})
	if err != nil {
		return nil, err
	}
	vr := &Variable{g: g, v: v}
	runtime.SetFinalizer(vr, (*Variable).Close)
	return vr, nil
}

// NewVariable makes a variable of the given type, layout and shape (its
// storage is allocated when first used).
func (g *Graph) NewVariable(dt DataType, f Format, shape ...int) (*Variable, error) {
	params, err := shapeParams("NewVariable", dt, f, shape)
	if err != nil {
		return nil, err
	}
	return g.newVar("NewVariable", params, false)
}

// Variable makes a variable without a shape: the first command that writes
// it gives it one (the usual output of Exec).
func (g *Graph) Variable() (*Variable, error) {
	return g.newVar("Variable", C.ccv_nnc_tensor_param_t{}, false)
}

// NewConstant makes a constant: no gradient flows to it.
func (g *Graph) NewConstant(dt DataType, f Format, shape ...int) (*Variable, error) {
	params, err := shapeParams("NewConstant", dt, f, shape)
	if err != nil {
		return nil, err
	}
	return g.newVar("NewConstant", params, true)
}

// VariableFromFloat32 makes an NHWC float32 variable holding a copy of data.
func (g *Graph) VariableFromFloat32(data []float32, shape ...int) (*Variable, error) {
	v, err := g.NewVariable(Float32, NHWC, shape...)
	if err != nil {
		return nil, err
	}
	if err := v.SetFloat32s(data); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

// ConstantFromFloat32 makes an NHWC float32 constant holding a copy of data.
func (g *Graph) ConstantFromFloat32(data []float32, shape ...int) (*Variable, error) {
	v, err := g.NewConstant(Float32, NHWC, shape...)
	if err != nil {
		return nil, err
	}
	if err := v.SetFloat32s(data); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

// Close frees the variable. Calling it again, or after the graph's Close,
// does nothing.
func (v *Variable) Close() error {
	if v == nil || v.v == nil {
		return nil
	}
	g := v.g
	g.mu.Lock()
	defer g.mu.Unlock()
	runtime.SetFinalizer(v, nil)
	if g.p != nil {
		C.ccv_nnc_tensor_variable_free(g.p, v.v)
	}
	v.v = nil
	return nil
}

// lock takes the graph's lock and checks that the variable and its graph are
// open; the caller unlocks g.mu.
func (v *Variable) lock(op string) error {
	if v == nil || v.v == nil {
		return closedError(op)
	}
	v.g.mu.Lock()
	if v.g.p == nil {
		v.g.mu.Unlock()
		return closedError(op)
	}
	return nil
}

// tensor is the variable's tensor (graph locked; on this locked thread).
func (v *Variable) tensor(op string) (*C.ccv_nnc_tensor_t, error) {
	var t *C.ccv_nnc_tensor_t
	err := cCall(op, func() int {
		t = C.ccv_nnc_tensor_from_variable_impl(v.g.p, v.v, nil)
		if t == nil {
			return CodeInvalid
		}
		return 0
	})
	return t, err
}

// Shape is the variable's shape (nil without one).
func (v *Variable) Shape() []int {
	if v.lock("Shape") != nil {
		return nil
	}
	defer v.g.mu.Unlock()
	params := C.ccv_nnc_tensor_variable_params(v.g.p, v.v)
	runtime.KeepAlive(v)
	var s []int
	for _, d := range params.dim {
		if d == 0 {
			break
		}
		s = append(s, int(d))
	}
	return s
}

func (v *Variable) copyValues(op string, dt DataType, mem unsafe.Pointer, n int, in bool) error {
	if err := v.lock(op); err != nil {
		return err
	}
	defer v.g.mu.Unlock()
	defer runtime.KeepAlive(v)
	t, err := v.tensor(op)
	if err != nil {
		return err
	}
	return cCall(op, func() int {
		if in {
			return int(C.ccv_nnc_tensor_copy_from(t, mem, C.int(dt), C.size_t(n)))
		}
		return int(C.ccv_nnc_tensor_copy_to(t, mem, C.int(dt), C.size_t(n)))
	})
}

// SetFloat32s copies data into the variable's tensor (converting to its
// type).
func (v *Variable) SetFloat32s(data []float32) error {
	return v.copyValues("SetFloat32s", Float32, sliceData(data), len(data), true)
}

// CopyFloat32s returns a copy of the variable's value as float32.
func (v *Variable) CopyFloat32s() ([]float32, error) {
	if err := v.lock("CopyFloat32s"); err != nil {
		return nil, err
	}
	v.g.mu.Unlock()
	n := 1
	s := v.Shape()
	if s == nil {
		return nil, invalidError("CopyFloat32s", "the variable has no value yet")
	}
	for _, d := range s {
		n *= d
	}
	out := make([]float32, n)
	if err := v.copyValues("CopyFloat32s", Float32, sliceData(out), n, false); err != nil {
		return nil, err
	}
	return out, nil
}

// varHandles collects the C handles of vars (nil: an empty slot). It returns
// false for a closed variable or one of another graph.
func (g *Graph) varHandles(vars []*Variable) ([]C.ccv_nnc_tensor_variable_t, bool) {
	if len(vars) == 0 {
		return nil, true
	}
	h := make([]C.ccv_nnc_tensor_variable_t, len(vars))
	for i, v := range vars {
		if v == nil {
			continue
		}
		if v.v == nil || v.g != g {
			return nil, false
		}
		h[i] = v.v
	}
	return h, true
}

func firstOrNil(h []C.ccv_nnc_tensor_variable_t) *C.ccv_nnc_tensor_variable_t {
	if len(h) == 0 {
		return nil
	}
	return &h[0]
}

// Exec runs cmd on the input variables now, writing the outputs (variables
// without a shape take the command's), and traces it.
func (g *Graph) Exec(cmd Cmd, hint Hint, inputs, outputs []*Variable) error {
	op := "Graph.Exec"
	if cmd.err != nil {
		return cmd.err
	}
	if hint.err != nil {
		return hint.err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.p == nil {
		return closedError(op)
	}
	in, ok1 := g.varHandles(inputs)
	out, ok2 := g.varHandles(outputs)
	if !ok1 || !ok2 {
		return closedError(op + " (a variable is closed or of another graph)")
	}
	err := cCall(cmdOp(cmd), func() int {
		return int(C.ccv_nnc_dynamic_graph_exec_p(g.p, cmd.native(), hint.native(), 0, firstOrNil(in), C.int(len(in)), firstOrNil(out), C.int(len(out)), 0, nil))
	})
	runtime.KeepAlive(inputs)
	runtime.KeepAlive(outputs)
	runtime.KeepAlive(cmd.b)
	runtime.KeepAlive(hint.b)
	return err
}

// Backward computes d(sum of fs)/d wrt, one new variable per wrt.
func (g *Graph) Backward(fs, wrt []*Variable) ([]*Variable, error) {
	const op = "Graph.Backward"
	if len(fs) == 0 || len(wrt) == 0 {
		return nil, invalidError(op, "give the functions and the variables to differentiate them by")
	}
	grads := make([]*Variable, len(wrt))
	for i := range grads {
		v, err := g.Variable()
		if err != nil {
			for _, p := range grads[:i] {
				p.Close()
			}
			return nil, err
		}
		grads[i] = v
	}
	err := func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.p == nil {
			return closedError(op)
		}
		f, ok1 := g.varHandles(fs)
		in, ok2 := g.varHandles(wrt)
		out, _ := g.varHandles(grads)
		if !ok1 || !ok2 {
			return closedError(op + " (a variable is closed or of another graph)")
		}
		return cCall(op, func() int {
			C.ccv_nnc_dynamic_graph_backward(g.p, firstOrNil(f), C.int(len(f)), nil, firstOrNil(in), C.int(len(in)), firstOrNil(out), C.int(len(out)), nil)
			return voidFailed()
		})
	}()
	runtime.KeepAlive(fs)
	runtime.KeepAlive(wrt)
	if err != nil {
		for _, v := range grads {
			v.Close()
		}
		return nil, err
	}
	return grads, nil
}

// Optimizer is a minimiser command with the state it keeps per parameter
// across steps (momenta), for Graph.Minimize.
type Optimizer struct {
	cmd    Cmd
	params []*Variable
	aux    []*Variable
}

// NewOptimizer prepares the minimiser (SGD, Adam, …) for the parameters.
func (g *Graph) NewOptimizer(minimizer Cmd, params []*Variable) (*Optimizer, error) {
	if minimizer.err != nil {
		return nil, minimizer.err
	}
	n := int(C.ccv_nnc_minimizer_saved_aux_size(*minimizer.native()))
	runtime.KeepAlive(minimizer.b)
	if n < 0 {
		return nil, invalidError("NewOptimizer", fmt.Sprintf("%s is not a minimiser", minimizer.Name()))
	}
	o := &Optimizer{cmd: minimizer, params: append([]*Variable(nil), params...)}
	for i := 0; i < n*len(params); i++ {
		v, err := g.Variable()
		if err != nil {
			o.Close()
			return nil, err
		}
		o.aux = append(o.aux, v)
	}
	return o, nil
}

// SetCmd replaces the minimiser (a new Adam step, a new rate), keeping its
// state.
func (o *Optimizer) SetCmd(minimizer Cmd) { o.cmd = minimizer }

// Close frees the optimiser's state.
func (o *Optimizer) Close() error {
	for _, v := range o.aux {
		v.Close()
	}
	o.aux = nil
	return nil
}

// Minimize runs backward from the losses to the optimiser's parameters and
// one minimiser step on each.
func (g *Graph) Minimize(o *Optimizer, losses []*Variable) error {
	op := "Graph.Minimize"
	if o.cmd.err != nil {
		return o.cmd.err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.p == nil {
		return closedError(op)
	}
	l, ok1 := g.varHandles(losses)
	p, ok2 := g.varHandles(o.params)
	a, ok3 := g.varHandles(o.aux)
	if !ok1 || !ok2 || !ok3 {
		return closedError(op + " (a variable is closed or of another graph)")
	}
	err := cCall(op, func() int {
		return int(C.ccv_nnc_dynamic_graph_minimize_p(g.p, o.cmd.native(), firstOrNil(l), C.int(len(l)), nil, firstOrNil(p), C.int(len(p)), firstOrNil(a), 0, nil))
	})
	runtime.KeepAlive(losses)
	runtime.KeepAlive(o)
	return err
}

// SetNoGrad stops (true) or resumes (false) tracing.
func (g *Graph) SetNoGrad(noGrad bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.p == nil {
		return closedError("SetNoGrad")
	}
	C.ccv_nnc_dynamic_graph_set_no_grad(g.p, cBool(noGrad))
	return nil
}
