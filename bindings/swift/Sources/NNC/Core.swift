// Errors, data types and library-wide queries.
import CNNC

/// A failure reported by libnnc: its code (`CCV_NNC_EXEC_*`, or -1 for calls
/// that return no code) and the message `ccv_nnc_error_message()` gave on the
/// calling thread.
public struct NNCError: Error, CustomStringConvertible, Equatable, Sendable {
  public let code: Int
  public let message: String
  public init(code: Int, message: String) {
    self.code = code
    self.message = message
  }
  public var description: String { "NNCError(\(code)): \(message)" }

  public static let invalid = Int(CCV_NNC_EXEC_INVALID)
  public static let noKernel = Int(CCV_NNC_EXEC_NO_KERNEL)
  public static let outOfMemory = Int(CCV_NNC_EXEC_OOM)

  /// The error for the last failure on this thread (read at once: the next
  /// NNC call on this thread resets the message).
  static func last(code: Int, fallback: @autoclosure () -> String) -> NNCError {
    let text = String(cString: ccv_nnc_error_message())
    return NNCError(code: code, message: text.isEmpty ? fallback() : text)
  }
}

/// Throws when `code` is not CCV_NNC_EXEC_SUCCESS.
@inline(__always)
func check(_ code: Int32, _ what: @autoclosure () -> String) throws {
  if _slowPath(code != 0) { throw NNCError.last(code: Int(code), fallback: "\(what()) failed with code \(code)") }
}

/// After a C call that returns nothing: every exported call starts with an
/// empty message, so a message now means that call failed.
@inline(__always)
func checkMessage(_ what: @autoclosure () -> String) throws {
  if _slowPath(ccv_nnc_error_message().pointee != 0) {
    throw NNCError.last(code: NNCError.invalid, fallback: what())
  }
}

/// Element types.
public enum DataType: Sendable, CaseIterable {
  case float32, float64, float16, bfloat16, int32, int64, uint8

  public var ccv: Int32 {
    switch self {
    case .float32: return Int32(CCV_32F)
    case .float64: return Int32(CCV_64F)
    case .float16: return Int32(CCV_16F)
    case .bfloat16: return Int32(CCV_16BF)
    case .int32: return Int32(CCV_32S)
    case .int64: return Int32(CCV_64S)
    case .uint8: return Int32(CCV_8U)
    }
  }
  public init?(ccv: Int32) {
    guard let t = DataType.allCases.first(where: { $0.ccv == ccv }) else { return nil }
    self = t
  }
  /// Bytes per element.
  public var size: Int {
    switch self {
    case .float32, .int32: return 4
    case .float64, .int64: return 8
    case .float16, .bfloat16: return 2
    case .uint8: return 1
    }
  }
}

/// Tensor layouts.
public enum TensorFormat: Sendable, CaseIterable {
  case nhwc, nchw, chwn
  public var ccv: Int32 {
    switch self {
    case .nhwc: return Int32(CCV_TENSOR_FORMAT_NHWC)
    case .nchw: return Int32(CCV_TENSOR_FORMAT_NCHW)
    case .chwn: return Int32(CCV_TENSOR_FORMAT_CHWN)
    }
  }
  public init?(ccv: Int32) {
    guard let f = TensorFormat.allCases.first(where: { $0.ccv == ccv }) else { return nil }
    self = f
  }
}

/// Shape, element type and layout of a CPU tensor.
public struct TensorParams: Equatable, Sendable {
  public var shape: [Int]
  public var dataType: DataType
  public var format: TensorFormat
  public init(_ shape: [Int], _ dataType: DataType = .float32, _ format: TensorFormat = .nhwc) {
    self.shape = shape
    self.dataType = dataType
    self.format = format
  }

  /// The C parameter block (ccv_nnc_tensor_param_make); throws on a bad shape.
  public func ccv() throws -> ccv_nnc_tensor_param_t {
    guard shape.count <= Int(CCV_NNC_MAX_DIM_ALLOC) else {
      throw NNCError(code: NNCError.invalid, message: "a tensor has at most \(CCV_NNC_MAX_DIM_ALLOC) dimensions, not \(shape.count)")
    }
    let dims = shape.map { Int32(clamping: $0) }
    let p = dims.withUnsafeBufferPointer {
      ccv_nnc_tensor_param_make(Int32(CCV_TENSOR_CPU_MEMORY | CCV_COMPUTE_DEVICE_ANY), format.ccv, dataType.ccv,
                                Int32(dims.count), $0.baseAddress)
    }
    if p.datatype == 0 { throw NNCError.last(code: NNCError.invalid, fallback: "bad tensor shape \(shape)") }
    return p
  }

  init(ccv p: ccv_nnc_tensor_param_t) {
    let rank = withUnsafePointer(to: p) { Int(ccv_nnc_tensor_param_rank($0)) }
    var dims = p.dim
    shape = withUnsafeBytes(of: &dims) { raw in (0..<rank).map { Int(raw.load(fromByteOffset: $0 * 4, as: Int32.self)) } }
    dataType = DataType(ccv: p.datatype) ?? .float32
    format = TensorFormat(ccv: p.format) ?? .nhwc
  }
}

/// Library-wide queries.
public enum NNC {
  /// The ABI the loaded libnnc was built with (CCV_NNC_ABI_VERSION).
  public static var abiVersion: Int { Int(ccv_nnc_abi_version()) }
  /// The library's version string.
  public static var version: String { String(cString: ccv_nnc_version()) }

  /// Kinds for `liveObjectCount`.
  public enum ObjectKind: Int32, CaseIterable, Sendable {
    case tensor = 0, streamContext, streamSignal, graph, symbolicGraph, tensorArena, graphExecArena
    case dynamicGraph, tensorVariable, model, dataframe, dataframeIter, tensorTape
  }
  /// How many objects of a kind are alive in the process (nil: all kinds).
  public static func liveObjectCount(_ kind: ObjectKind? = nil) -> Int {
    Int(ccv_nnc_live_object_count(kind?.rawValue ?? -1))
  }

  /// Call once before anything else (the binding does it on first use).
  static let initialized: Bool = {
    ccv_nnc_init()
    return true
  }()
}
