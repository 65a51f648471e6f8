// Commands: typed builders over the C constructors, and execution.
import CNNC

/// Stride and padding of a windowed command (convolution, pooling).
public struct Hint: @unchecked Sendable {
  public var raw: ccv_nnc_hint_t
  public init(raw: ccv_nnc_hint_t) { self.raw = raw }
  /// No hint.
  public static var none: Hint { Hint(raw: ccv_nnc_hint_t()) }
  /// Per spatial dimension: stride, padding before and padding after (nil: as before).
  public init(stride: [Int], border: [Int] = [], borderEnd: [Int]? = nil) throws {
    let rank = stride.count
    let s = stride.map { Int32($0) }
    let b = (border.isEmpty ? [Int](repeating: 0, count: rank) : border).map { Int32($0) }
    let e = (borderEnd ?? (border.isEmpty ? [Int](repeating: 0, count: rank) : border)).map { Int32($0) }
    guard b.count == rank, e.count == rank else {
      throw NNCError(code: NNCError.invalid, message: "a hint needs as many border entries as strides (\(rank))")
    }
    raw = ccv_nnc_hint_make(Int32(rank), s, b, e)
    try checkMessage("ccv_nnc_hint_make")
  }
  /// The hint that maps `input` to `output` for `command` (ccv_nnc_hint_auto).
  public static func auto(_ command: Command, input: TensorParams, output: TensorParams) throws -> Hint {
    var a = try input.ccv()
    var b = try output.ccv()
    var c = command.raw
    return Hint(raw: ccv_nnc_hint_auto_p(&c, &a, &b))
  }
}

/// A command: what to run and its parameters (ccv_nnc_cmd_t), built by the
/// typed constructors below; each equals the C CMD_*_FORWARD() macro.
public struct Command: @unchecked Sendable {
  public var raw: ccv_nnc_cmd_t
  public init(raw: ccv_nnc_cmd_t) { self.raw = raw }

  static func checked(_ c: ccv_nnc_cmd_t, _ what: String) throws -> Command {
    if c.cmd == 0 { throw NNCError.last(code: NNCError.invalid, fallback: "\(what): bad arguments") }
    return Command(raw: c)
  }

  // Linear algebra and element-wise arithmetic.
  /// a × w (+ bias); transposes as axis pairs, e.g. `transposeB: (0, 1)`.
  public static func gemm(transposeA: (Int, Int)? = nil, transposeB: (Int, Int)? = nil) -> Command {
    let ta = transposeA.map { [Int32($0.0), Int32($0.1)] }
    let tb = transposeB.map { [Int32($0.0), Int32($0.1)] }
    return Command(raw: ccv_nnc_cmd_gemm_forward(ta, tb))
  }
  /// p·a + q·b
  public static func add(_ p: Float = 1, _ q: Float = 1) -> Command { Command(raw: ccv_nnc_cmd_add_forward(p, q)) }
  /// p·a·b
  public static func mul(_ p: Float = 1) -> Command { Command(raw: ccv_nnc_cmd_mul_forward(p)) }
  public static func scalarMul(_ a: Float) -> Command { Command(raw: ccv_nnc_cmd_scalar_mul_forward(a)) }
  public static func ewsum() -> Command { Command(raw: ccv_nnc_cmd_ewsum_forward()) }
  public static func ewprod() -> Command { Command(raw: ccv_nnc_cmd_ewprod_forward()) }
  public static func ewdiv() -> Command { Command(raw: ccv_nnc_cmd_ewdiv_forward()) }
  public static func ewexp() -> Command { Command(raw: ccv_nnc_cmd_ewexp_forward()) }
  public static func ewlog() -> Command { Command(raw: ccv_nnc_cmd_ewlog_forward()) }
  public static func ewsqrt() -> Command { Command(raw: ccv_nnc_cmd_ewsqrt_forward()) }

  // Convolution and pooling.
  /// `filters` output channels, kernel sizes e.g. [kh, kw, inputChannels].
  public static func convolution(groups: Int = 1, filters: Int, kernel: [Int]) throws -> Command {
    let k = kernel.map { Int32($0) }
    return try checked(ccv_nnc_cmd_convolution_forward(Int32(groups), Int32(filters), Int32(k.count), k),
                       "convolution")
  }
  public static func maxPool(_ rows: Int, _ cols: Int) -> Command {
    Command(raw: ccv_nnc_cmd_max_pool_forward(Int32(rows), Int32(cols)))
  }
  public static func averagePool(_ rows: Int, _ cols: Int) -> Command {
    Command(raw: ccv_nnc_cmd_average_pool_forward(Int32(rows), Int32(cols)))
  }

  // Activations.
  public static func relu() -> Command { Command(raw: ccv_nnc_cmd_relu_forward()) }
  public static func sigmoid() -> Command { Command(raw: ccv_nnc_cmd_sigmoid_forward()) }
  public static func tanh() -> Command { Command(raw: ccv_nnc_cmd_tanh_forward()) }
  public static func gelu(tanhApproximation: Bool = false) -> Command {
    Command(raw: ccv_nnc_cmd_gelu_forward(tanhApproximation ? 1 : 0))
  }
  public static func swish() -> Command { Command(raw: ccv_nnc_cmd_swish_forward()) }
  public static func leakyRelu(_ negativeSlope: Float) -> Command {
    Command(raw: ccv_nnc_cmd_leaky_relu_forward(negativeSlope))
  }
  public static func softmax() -> Command { Command(raw: ccv_nnc_cmd_softmax_forward()) }

  // Losses.
  /// Inputs: logits and labels (class indices or one-hot); outputs: loss and softmax.
  public static func softmaxCrossEntropy(trim0: Float = 0, trim1: Float = 1) -> Command {
    Command(raw: ccv_nnc_cmd_softmax_crossentropy_forward(trim0, trim1))
  }
  public enum Reduction: Sendable { case mean, sum }
  public static func mse(_ reduction: Reduction = .mean) -> Command {
    Command(raw: ccv_nnc_cmd_mse_forward(Int32(reduction == .mean ? CCV_NNC_MSE_REDUCE_MEAN : CCV_NNC_MSE_REDUCE_SUM)))
  }

  // Normalisation.
  public static func batchNorm(epsilon: Float = 1e-5, isTest: Bool = false, momentum: Float = 0.9, axes: [Int]) throws -> Command {
    let a = axes.map { Int32($0) }
    return try checked(ccv_nnc_cmd_batch_norm_forward(epsilon, isTest ? 1 : 0, momentum, Int32(a.count), a), "batchNorm")
  }
  public static func layerNorm(epsilon: Float = 1e-5, elementwiseAffine: Bool = true, axes: [Int]) throws -> Command {
    let a = axes.map { Int32($0) }
    return try checked(ccv_nnc_cmd_layer_norm_forward(epsilon, elementwiseAffine ? 1 : 0, Int32(a.count), a), "layerNorm")
  }

  // Optimisers.
  public static func sgd(rate: Float, momentum: Float = 0, nesterov: Bool = false, scale: Float = 1, decay: Float = 0,
                         dampening: Float = 0) -> Command {
    Command(raw: ccv_nnc_cmd_sgd_forward(nesterov ? 1 : 0, rate, scale, decay, momentum, dampening))
  }
  public static func adam(step: Int = 1, rate: Float = 1e-3, beta1: Float = 0.9, beta2: Float = 0.999, decay: Float = 0,
                          epsilon: Float = 1e-8, amsgrad: Bool = false) -> Command {
    Command(raw: ccv_nnc_cmd_adam_forward(Int32(step), rate, beta1, beta2, decay, epsilon, amsgrad ? 1 : 0))
  }
  public static func adamw(step: Int = 1, rate: Float = 1e-3, beta1: Float = 0.9, beta2: Float = 0.999, decay: Float = 0.01,
                           epsilon: Float = 1e-8, amsgrad: Bool = false) -> Command {
    Command(raw: ccv_nnc_cmd_adamw_forward(Int32(step), rate, beta1, beta2, decay, epsilon, amsgrad ? 1 : 0))
  }

  // Utilities and reductions.
  public static func set(_ value: Float) -> Command { Command(raw: ccv_nnc_cmd_set_forward(value)) }
  public static func dataTransfer() -> Command { Command(raw: ccv_nnc_cmd_data_transfer_forward()) }
  public static func transpose(_ a: Int, _ b: Int) -> Command {
    Command(raw: ccv_nnc_cmd_transpose_forward(Int32(a), Int32(b)))
  }
  public static func reduceSum(axes: [Int]) throws -> Command {
    let a = axes.map { Int32($0) }
    return try checked(ccv_nnc_cmd_reduce_sum_forward(Int32(a.count), a), "reduceSum")
  }
  public static func reduceMean(axes: [Int]) throws -> Command {
    let a = axes.map { Int32($0) }
    return try checked(ccv_nnc_cmd_reduce_mean_forward(Int32(a.count), a), "reduceMean")
  }

  /// Output shapes for inputs (ccv_nnc_hint_tensor_auto).
  public func outputParams(for inputs: [TensorParams?], outputCount: Int = 1, hint: Hint = .none) throws -> [TensorParams] {
    let ins = try inputs.map { try $0?.ccv() ?? ccv_nnc_tensor_param_t() }
    var outs = [ccv_nnc_tensor_param_t](repeating: ccv_nnc_tensor_param_t(), count: outputCount)
    ccv_nnc_hint_tensor_auto(raw, ins, Int32(ins.count), hint.raw, &outs, Int32(outputCount))
    try checkMessage("ccv_nnc_hint_tensor_auto")
    return outs.map { TensorParams(ccv: $0) }
  }

  /// Run on `inputs`, writing `outputs` (each made unique first: other
  /// copies of an output keep their values). A nil input is an empty slot.
  /// With a stream the call is queued; the stream keeps the tensors alive
  /// until `wait()`.
  public func exec(inputs: [Tensor?], outputs: inout [Tensor], hint: Hint = .none, stream: StreamContext? = nil) throws {
    try run(inputs, { $0?.storage }, &outputs, hint, stream)
  }
  /// The same without empty input slots (no conversion to an array of optionals).
  public func exec(inputs: [Tensor], outputs: inout [Tensor], hint: Hint = .none, stream: StreamContext? = nil) throws {
    try run(inputs, { $0.storage }, &outputs, hint, stream)
  }

  private func run<T>(_ inputs: [T], _ storage: (T) -> TensorStorage?, _ outputs: inout [Tensor], _ hint: Hint,
                      _ stream: StreamContext?) throws {
    for i in outputs.indices { outputs[i].makeUnique() }
    let ni = inputs.count, no = outputs.count
    var c = raw
    var h = hint.raw
    let rc: Int32 = outputs.withUnsafeBufferPointer { outs in
      withUnsafeTemporaryAllocation(of: UnsafeMutablePointer<ccv_nnc_tensor_t>?.self, capacity: ni + no) { io in
        for i in 0..<ni { io[i] = storage(inputs[i])?.handle }
        for i in 0..<no { io[ni + i] = outs[i].storage.handle }
        return ccv_nnc_cmd_exec_p(&c, &h, 0, io.baseAddress, Int32(ni), io.baseAddress! + ni, Int32(no), stream?.handle)
      }
    }
    try check(rc, "ccv_nnc_cmd_exec")
    if let stream {
      stream.keepAlive(inputs.compactMap(storage))
      stream.keepAlive(outputs.map { $0.storage })
    }
  }

  /// Run on one input into one output (the common case, no arrays).
  public func exec(_ input: Tensor, into output: inout Tensor, hint: Hint = .none) throws {
    output.makeUnique()
    var c = raw
    var h = hint.raw
    var a: UnsafeMutablePointer<ccv_nnc_tensor_t>? = input.storage.handle
    var b: UnsafeMutablePointer<ccv_nnc_tensor_t>? = output.storage.handle
    let rc = withExtendedLifetime(input) { ccv_nnc_cmd_exec_p(&c, &h, 0, &a, 1, &b, 1, nil) }
    try check(rc, "ccv_nnc_cmd_exec")
  }

  /// Run on `inputs` into new tensors shaped by the command's inference.
  public func callAsFunction(_ inputs: Tensor?..., outputCount: Int = 1, hint: Hint = .none) throws -> [Tensor] {
    let params = try outputParams(for: inputs.map { $0?.params }, outputCount: outputCount, hint: hint)
    var outs = try params.map { try Tensor($0) }
    try exec(inputs: inputs, outputs: &outs, hint: hint)
    return outs
  }
}
