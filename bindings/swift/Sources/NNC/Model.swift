// Models (Level 5): layers, sequential models, compile, fit, evaluate, and
// parameters on disk.
import CNNC

/// A model (ccv_cnnp_model_t). A model put into a sequential model belongs to
/// it from then on: its Swift object stays usable for reading but no longer
/// frees the C model, and it cannot join a second one.
public final class Model: @unchecked Sendable {
  let handle: OpaquePointer
  private(set) var owned = true
  private var children: [Model] = []

  init(_ handle: OpaquePointer?, _ what: String) throws {
    _ = NNC.initialized
    guard let handle else { throw NNCError.last(code: NNCError.invalid, fallback: "\(what) failed") }
    self.handle = handle
  }
  deinit { if owned { ccv_cnnp_model_free(handle) } }

  // Layers.
  public static func dense(_ count: Int, noBias: Bool = false, name: String? = nil) throws -> Model {
    try Model(ccv_cnnp_dense(Int32(count), noBias ? 1 : 0, 0, 1, name), "ccv_cnnp_dense")
  }
  public static func relu(name: String? = nil) throws -> Model { try Model(ccv_cnnp_relu(name), "ccv_cnnp_relu") }
  public static func sigmoid(name: String? = nil) throws -> Model { try Model(ccv_cnnp_sigmoid(name), "ccv_cnnp_sigmoid") }
  public static func tanh(name: String? = nil) throws -> Model { try Model(ccv_cnnp_tanh(name), "ccv_cnnp_tanh") }
  public static func softmax(name: String? = nil) throws -> Model { try Model(ccv_cnnp_softmax(name), "ccv_cnnp_softmax") }
  public static func flatten(name: String? = nil) throws -> Model { try Model(ccv_cnnp_flatten(name), "ccv_cnnp_flatten") }
  /// A 2-d convolution: `filters` outputs, `kernel` [kh, kw], stride and padding in `hint`.
  public static func convolution(filters: Int, kernel: [Int], groups: Int = 1, noBias: Bool = false, hint: Hint = .none,
                                 name: String? = nil) throws -> Model {
    var k = [Int32](repeating: 0, count: Int(CCV_NNC_MAX_DIM_ALLOC))
    for (i, v) in kernel.enumerated() where i < k.count { k[i] = Int32(v) }
    var d = [Int32](repeating: 0, count: Int(CCV_NNC_MAX_DIM_ALLOC))
    return try Model(ccv_cnnp_convolution(Int32(groups), Int32(filters), &k, &d, noBias ? 1 : 0, hint.raw, 0, 1, name),
                     "ccv_cnnp_convolution")
  }
  public static func maxPool(_ kernel: [Int], hint: Hint = .none, name: String? = nil) throws -> Model {
    var k = [Int32](repeating: 0, count: Int(CCV_NNC_MAX_DIM_ALLOC))
    for (i, v) in kernel.enumerated() where i < k.count { k[i] = Int32(v) }
    return try Model(ccv_cnnp_max_pool(&k, hint.raw, name), "ccv_cnnp_max_pool")
  }

  /// The models one after another; they belong to the new model.
  public static func sequential(_ models: [Model], name: String? = nil) throws -> Model {
    for m in models where !m.owned {
      throw NNCError(code: NNCError.invalid, message: "a model already belongs to another model")
    }
    if Set(models.map { ObjectIdentifier($0) }).count != models.count {
      throw NNCError(code: NNCError.invalid, message: "the same model appears twice in a sequential model")
    }
    var hs: [OpaquePointer?] = models.map { $0.handle }
    let s = try Model(ccv_cnnp_sequential_new(&hs, Int32(hs.count), 1, name), "ccv_cnnp_sequential_new")
    for m in models { m.owned = false }
    s.children = models
    return s
  }

  /// Build the training graph for inputs of these shapes.
  public func compile(inputs: [TensorParams], minimizer: Command, loss: Command) throws {
    let ps = try inputs.map { try $0.ccv() }
    var m = minimizer.raw
    var l = loss.raw
    try check(ccv_cnnp_model_compile_p(handle, ps, Int32(ps.count), &m, &l), "ccv_cnnp_model_compile")
  }
  /// Replace the minimiser (e.g. a new learning rate).
  public func setMinimizer(_ minimizer: Command, reset: Bool = false) throws {
    ccv_cnnp_model_set_minimizer(handle, minimizer.raw, reset ? 1 : 0, nil, 0)
    try checkMessage("ccv_cnnp_model_set_minimizer")
  }
  public var parameterCount: Int { Int(ccv_cnnp_model_parameter_count(handle)) }

  /// Shapes of the compiled model's outputs.
  public func outputParams(count: Int = 1) throws -> [TensorParams] {
    var outs = [ccv_nnc_tensor_param_t](repeating: ccv_nnc_tensor_param_t(), count: count)
    ccv_cnnp_model_tensor_auto(handle, &outs, Int32(count))
    try checkMessage("ccv_cnnp_model_tensor_auto")
    return outs.map { TensorParams(ccv: $0) }
  }

  /// One training step: forward, loss against `fits`, backward, update. `outputs` receive the model's outputs.
  public func fit(inputs: [Tensor], fits: [Tensor], outputs: inout [Tensor]) throws {
    for i in outputs.indices { outputs[i].makeUnique() }
    let ins: [UnsafeMutablePointer<ccv_nnc_tensor_t>?] = inputs.map { $0.storage.handle }
    let fs: [UnsafeMutablePointer<ccv_nnc_tensor_t>?] = fits.map { $0.storage.handle }
    let outs: [UnsafeMutablePointer<ccv_nnc_tensor_t>?] = outputs.map { $0.storage.handle }
    ccv_cnnp_model_fit(handle, ins, Int32(ins.count), fs, Int32(fs.count), outs, Int32(outs.count), nil, nil)
    try checkMessage("ccv_cnnp_model_fit")
    withExtendedLifetime((inputs, fits, outputs)) {}
  }

  /// Forward only into `outputs`.
  public func evaluate(inputs: [Tensor], outputs: inout [Tensor], isTest: Bool = true) throws {
    for i in outputs.indices { outputs[i].makeUnique() }
    let ins: [UnsafeMutablePointer<ccv_nnc_tensor_t>?] = inputs.map { $0.storage.handle }
    let outs: [UnsafeMutablePointer<ccv_nnc_tensor_t>?] = outputs.map { $0.storage.handle }
    var p = ccv_cnnp_evaluate_param_t()
    p.is_test = isTest ? 1 : 0
    ccv_cnnp_model_evaluate(handle, p, ins, Int32(ins.count), outs, Int32(outs.count), nil, nil)
    try checkMessage("ccv_cnnp_model_evaluate")
    withExtendedLifetime((inputs, outputs)) {}
  }
  /// Forward only, one input, a new output tensor.
  public func callAsFunction(_ input: Tensor) throws -> Tensor {
    var outs = [try Tensor(try outputParams()[0])]
    try evaluate(inputs: [input], outputs: &outs)
    return outs[0]
  }

  /// Which parameter of a layer: its weight or its bias.
  public enum ParameterKind: Sendable { case weight, bias }

  /// A copy of the index-th weight (or bias) of a compiled model, in layer order.
  public func parameter(_ kind: ParameterKind, index: Int = 0) throws -> Tensor {
    let io = try parameterIO(kind, index)
    let p = ccv_cnnp_model_parameter_tensor_params(handle, io)
    try checkMessage("ccv_cnnp_model_parameter_tensor_params")
    var t = try Tensor(storage: TensorStorage(params: p))
    t.makeUnique()
    ccv_cnnp_model_parameter_copy(handle, io, t.storage.handle)
    try checkMessage("ccv_cnnp_model_parameter_copy")
    return t
  }
  /// Set the index-th weight (or bias) of a compiled model from `tensor` (same shape).
  public func setParameter(_ kind: ParameterKind, index: Int = 0, _ tensor: Tensor) throws {
    let io = try parameterIO(kind, index)
    let packed = tensor.isView ? tensor.storage.packedCopy() : tensor.storage
    withExtendedLifetime(packed) { ccv_cnnp_model_set_parameter(handle, io, packed.handle) }
    try checkMessage("ccv_cnnp_model_set_parameter")
  }
  private func parameterIO(_ kind: ParameterKind, _ index: Int) throws -> ccv_cnnp_model_io_t {
    let selector = Int32(kind == .weight ? CCV_CNNP_PARAMETER_SELECT_WEIGHT : CCV_CNNP_PARAMETER_SELECT_BIAS)
    guard let io = ccv_cnnp_model_parameters(handle, selector, Int32(index)) else {
      throw NNCError.last(code: NNCError.invalid, fallback: "no such parameter")
    }
    return io
  }

  /// Parameters (and minimiser state) to an SQLite file.
  public func write(to path: String) throws {
    ccv_cnnp_model_write_to_file(handle, path, nil)
    try checkMessage("ccv_cnnp_model_write_to_file")
  }
  /// Parameters from a file written by `write(to:)` (the model must be compiled the same way).
  public func read(from path: String) throws {
    ccv_cnnp_model_read_from_file(path, nil, handle)
    try checkMessage("ccv_cnnp_model_read_from_file")
  }
}
