// The dynamic graph: variables, commands run at once and traced, backward
// and minimisation (Level 4).
import CNNC

/// A dynamic graph (ccv_nnc_dynamic_graph_t). Variables keep their graph
/// alive; the graph is freed when the last of them and this object are gone.
/// Not thread-safe: use one graph from one thread at a time.
public final class DynamicGraph: @unchecked Sendable {
  let handle: OpaquePointer

  public init() throws {
    _ = NNC.initialized
    guard let g = ccv_nnc_dynamic_graph_new() else {
      throw NNCError.last(code: NNCError.invalid, fallback: "ccv_nnc_dynamic_graph_new failed")
    }
    handle = g
  }
  deinit { ccv_nnc_dynamic_graph_free(handle) }

  /// A variable with a shape (nil: the first command that writes it gives one).
  public func variable(_ params: TensorParams? = nil) throws -> Variable {
    let p = try params?.ccv() ?? ccv_nnc_tensor_param_t()
    guard let v = ccv_nnc_tensor_variable_new_impl(handle, p) else {
      throw NNCError.last(code: NNCError.invalid, fallback: "ccv_nnc_tensor_variable_new failed")
    }
    return Variable(graph: self, handle: v)
  }
  /// A variable holding a copy of `tensor`.
  public func variable(_ tensor: Tensor) throws -> Variable {
    let v = try variable(tensor.params)
    try v.assign(tensor)
    return v
  }
  /// A constant (no gradient flows to it) holding a copy of `tensor`.
  public func constant(_ tensor: Tensor) throws -> Variable {
    guard let c = ccv_nnc_tensor_constant_new_impl(handle, try tensor.params.ccv()) else {
      throw NNCError.last(code: NNCError.invalid, fallback: "ccv_nnc_tensor_constant_new failed")
    }
    let v = Variable(graph: self, handle: c)
    try v.assign(tensor)
    return v
  }

  /// Run `command` on `inputs` now, into `outputCount` new variables (shaped by
  /// the command), and trace it for backward.
  public func exec(_ command: Command, _ inputs: [Variable?], outputCount: Int = 1, hint: Hint = .none) throws -> [Variable] {
    let outs = try (0..<outputCount).map { _ in try variable() }
    try exec(command, inputs, into: outs, hint: hint)
    return outs
  }
  /// Run `command` on `inputs` into existing `outputs`.
  public func exec(_ command: Command, _ inputs: [Variable?], into outputs: [Variable], hint: Hint = .none) throws {
    try checkSameGraph(inputs.compactMap { $0 } + outputs)
    let ins: [ccv_nnc_tensor_variable_t?] = inputs.map { $0?.handle }
    var outs: [ccv_nnc_tensor_variable_t?] = outputs.map { $0.handle }
    var c = command.raw
    var h = hint.raw
    let rc = ccv_nnc_dynamic_graph_exec_p(handle, &c, &h, 0, ins, Int32(ins.count), &outs, Int32(outs.count), 0, nil)
    try check(rc, "ccv_nnc_dynamic_graph_exec")
    withExtendedLifetime((inputs, outputs)) {}
  }

  /// d(sum of f) / d inputs, one new variable per input.
  public func backward(_ f: [Variable], wrt inputs: [Variable]) throws -> [Variable] {
    try checkSameGraph(f + inputs)
    let grads = try inputs.map { _ in try variable() }
    let fs: [ccv_nnc_tensor_variable_t?] = f.map { $0.handle }
    let ins: [ccv_nnc_tensor_variable_t?] = inputs.map { $0.handle }
    var outs: [ccv_nnc_tensor_variable_t?] = grads.map { $0.handle }
    ccv_nnc_dynamic_graph_backward(handle, fs, Int32(fs.count), nil, ins, Int32(ins.count), &outs, Int32(outs.count), nil)
    try checkMessage("ccv_nnc_dynamic_graph_backward")
    withExtendedLifetime((f, inputs)) {}
    return grads
  }

  /// One minimiser step on `parameters` for `losses`; `optimizer` keeps the
  /// minimiser's state across steps.
  public func minimize(_ optimizer: Optimizer, losses: [Variable], parameters: [Variable]) throws {
    try checkSameGraph(losses + parameters)
    let auxPer = Int(ccv_nnc_minimizer_saved_aux_size(optimizer.command.raw))
    if optimizer.savedAux.count != auxPer * parameters.count || optimizer.savedAux.contains(where: { $0.graph !== self }) {
      optimizer.savedAux = try (0..<(auxPer * parameters.count)).map { _ in try variable() }
    }
    let ls: [ccv_nnc_tensor_variable_t?] = losses.map { $0.handle }
    var ps: [ccv_nnc_tensor_variable_t?] = parameters.map { $0.handle }
    var aux: [ccv_nnc_tensor_variable_t?] = optimizer.savedAux.map { $0.handle }
    var c = optimizer.command.raw
    let rc = ccv_nnc_dynamic_graph_minimize_p(handle, &c, ls, Int32(ls.count), nil, &ps, Int32(ps.count), &aux, 0, nil)
    try check(rc, "ccv_nnc_dynamic_graph_minimize")
    withExtendedLifetime((losses, parameters)) {}
  }

  private func checkSameGraph(_ vs: [Variable]) throws {
    for v in vs where v.graph !== self {
      throw NNCError(code: NNCError.invalid, message: "a variable of another dynamic graph was passed")
    }
  }
}

/// A minimiser command and the per-parameter state it keeps between steps.
public final class Optimizer {
  public var command: Command
  var savedAux: [Variable] = []
  public init(_ command: Command) { self.command = command }
}

/// A tensor variable of a dynamic graph; freed in deinit.
public final class Variable {
  public let graph: DynamicGraph
  let handle: ccv_nnc_tensor_variable_t

  init(graph: DynamicGraph, handle: ccv_nnc_tensor_variable_t) {
    self.graph = graph
    self.handle = handle
  }
  deinit { ccv_nnc_tensor_variable_free(graph.handle, handle) }

  public var params: TensorParams { TensorParams(ccv: ccv_nnc_tensor_variable_params(graph.handle, handle)) }

  /// A copy of the variable's current value.
  public func value() throws -> Tensor {
    guard let t = ccv_nnc_tensor_from_variable_impl(graph.handle, handle, nil) else {
      throw NNCError.last(code: NNCError.invalid, fallback: "the variable has no value")
    }
    var p = ccv_nnc_tensor_param_t()
    _ = ccv_nnc_tensor_get_params(t, &p)
    let copy = try TensorStorage(params: p)
    let rc = ccv_nnc_tensor_copy_to(t, ccv_nnc_tensor_data_ptr(copy.handle), p.datatype, ccv_nnc_tensor_param_count(&p))
    if rc != 0 { throw NNCError.last(code: NNCError.invalid, fallback: "reading the variable failed") }
    return Tensor(storage: copy)
  }

  /// Overwrite the variable's value with `tensor`'s elements (same count).
  public func assign(_ tensor: Tensor) throws {
    guard let t = ccv_nnc_tensor_from_variable_impl(graph.handle, handle, nil) else {
      throw NNCError.last(code: NNCError.invalid, fallback: "the variable has no shape")
    }
    let packed = tensor.isView ? tensor.storage.packedCopy() : tensor.storage
    let rc = withExtendedLifetime(packed) {
      ccv_nnc_tensor_copy_from(t, ccv_nnc_tensor_data_ptr(packed.handle), packed.handle.pointee.info.datatype, tensor.count)
    }
    if rc != 0 { throw NNCError.last(code: NNCError.invalid, fallback: "writing the variable failed") }
  }
}
