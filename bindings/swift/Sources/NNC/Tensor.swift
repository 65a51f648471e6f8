// Tensor: a copy-on-write value over a libnnc tensor (or tensor view).
import CNNC

/// Owns one C tensor or tensor view; frees it in deinit. A view keeps the
/// storage it looks into alive.
final class TensorStorage: @unchecked Sendable {
  let handle: UnsafeMutablePointer<ccv_nnc_tensor_t>
  let base: TensorStorage?  // non-nil for a view
  // A view lent by Tensor.withMutableView: written in place while lent.
  var writeThrough = false

  init(params: ccv_nnc_tensor_param_t) throws {
    _ = NNC.initialized
    guard let t = ccv_nnc_tensor_new(nil, params, 0) else {
      throw NNCError.last(code: NNCError.invalid, fallback: "ccv_nnc_tensor_new failed")
    }
    handle = t
    base = nil
  }

  init(viewOf base: TensorStorage, params: ccv_nnc_tensor_param_t, offset: [Int32], stride: [Int32]) throws {
    let n = Int(CCV_NNC_MAX_DIM_ALLOC)
    guard offset.count <= n, stride.count <= n else {
      throw NNCError(code: NNCError.invalid, message: "a view has at most \(n) dimensions")
    }
    var ofs = [Int32](repeating: 0, count: n)
    var st = ofs
    for i in offset.indices { ofs[i] = offset[i] }
    for i in stride.indices { st[i] = stride[i] }
    let v = stride.isEmpty ? ccv_nnc_tensor_view_new(base.handle, params, &ofs, nil) : ccv_nnc_tensor_view_new(base.handle, params, &ofs, &st)
    guard let v else {
      throw NNCError.last(code: NNCError.invalid, fallback: "ccv_nnc_tensor_view_new failed")
    }
    handle = UnsafeMutableRawPointer(v).assumingMemoryBound(to: ccv_nnc_tensor_t.self)
    self.base = base
  }

  var isView: Bool { base != nil }

  deinit {
    if base != nil {
      ccv_nnc_tensor_view_free(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: ccv_nnc_tensor_view_t.self))
    } else {
      ccv_nnc_tensor_free(handle)
    }
  }
}

/// A CPU tensor with value semantics: copies share storage until one of them
/// is written (copy on write). A view (`view(offset:shape:strides:)`) reads
/// its parent's memory without copying; writing to a view, or to a tensor
/// that a view still looks into, first gives the writer its own copy.
/// Sendable: a storage shared between values is never written.
public struct Tensor: @unchecked Sendable, CustomStringConvertible {
  var storage: TensorStorage

  /// An uninitialised tensor.
  public init(_ params: TensorParams) throws {
    storage = try TensorStorage(params: params.ccv())
  }
  public init(shape: [Int], dataType: DataType = .float32, format: TensorFormat = .nhwc) throws {
    try self.init(TensorParams(shape, dataType, format))
  }
  /// A tensor of `dataType` holding `values` (converted), row-major over `shape`.
  public init(_ values: [Float], shape: [Int], dataType: DataType = .float32, format: TensorFormat = .nhwc) throws {
    try self.init(TensorParams(shape, dataType, format))
    try copyIn(values, Int32(CCV_32F))
  }
  public init(doubles values: [Double], shape: [Int], dataType: DataType = .float64, format: TensorFormat = .nhwc) throws {
    try self.init(TensorParams(shape, dataType, format))
    try copyIn(values, Int32(CCV_64F))
  }
  init(storage: TensorStorage) { self.storage = storage }

  /// The C tensor (borrowed: valid while this value, or a copy of it, lives).
  public var handle: UnsafeMutablePointer<ccv_nnc_tensor_t> { storage.handle }

  public var params: TensorParams { TensorParams(ccv: storage.handle.pointee.info) }
  public var shape: [Int] { params.shape }
  public var dataType: DataType { DataType(ccv: storage.handle.pointee.info.datatype) ?? .float32 }
  public var format: TensorFormat { TensorFormat(ccv: storage.handle.pointee.info.format) ?? .nhwc }
  public var count: Int { withUnsafePointer(to: storage.handle.pointee.info) { Int(ccv_nnc_tensor_param_count($0)) } }
  public var isView: Bool { storage.isView }

  /// Element strides (packed for a plain tensor).
  public var strides: [Int] {
    var s = [Int32](repeating: 0, count: Int(CCV_NNC_MAX_DIM_ALLOC))
    _ = ccv_nnc_tensor_get_strides(storage.handle, &s)
    return s.prefix(shape.count).map(Int.init)
  }

  /// The elements, row-major, converted to Float / Double.
  public var floats: [Float] { copyOut(Float.self, Int32(CCV_32F)) }
  public var doubles: [Double] { copyOut(Double.self, Int32(CCV_64F)) }

  /// A window of `shape` starting at `offset` (one entry per dimension of
  /// the window), with element `strides` (nil: this tensor's strides when the
  /// ranks match, else packed). Shares memory with self; a view of a view
  /// looks into a packed copy of the first view.
  public func view(offset: [Int], shape: [Int], strides: [Int]? = nil) throws -> Tensor {
    var p = try TensorParams(shape, dataType, format).ccv()
    p.type = storage.handle.pointee.info.type
    let root = storage.isView ? storage.packedCopy() : storage
    let rootStrides = Tensor(storage: root).strides
    let st = strides ?? (shape.count == rootStrides.count ? rootStrides : [])
    return Tensor(storage: try TensorStorage(viewOf: root, params: p, offset: offset.map { Int32(clamping: $0) },
                                             stride: st.map { Int32(clamping: $0) }))
  }

  /// Make this value the only owner of packed storage before it is written.
  public mutating func makeUnique() {
    if _fastPath(isKnownUniquelyReferenced(&storage) && (!storage.isView || storage.writeThrough)) { return }
    storage = storage.packedCopy()
  }

  /// Lend `body` a view of part of this tensor that writes through to it (a
  /// command's output into a slice, say). Only the lent value writes through,
  /// and only until `body` returns; copies of it copy on write as usual.
  public mutating func withMutableView<R>(offset: [Int], shape: [Int], strides: [Int]? = nil,
                                          _ body: (inout Tensor) throws -> R) throws -> R {
    makeUnique()
    var v = try view(offset: offset, shape: shape, strides: strides)
    v.storage.writeThrough = true
    weak var lent = v.storage  // weak: the lent value stays the storage's only owner
    defer { lent?.writeThrough = false }
    return try withExtendedLifetime(self) { try body(&v) }
  }

  /// Read the elements in place (a packed copy is made first for a view).
  public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
    let s = storage.isView ? storage.packedCopy() : storage
    let bytes = count * dataType.size
    return try withExtendedLifetime(s) { try body(UnsafeRawBufferPointer(start: ccv_nnc_tensor_data_ptr(s.handle), count: bytes)) }
  }
  /// Write the elements in place (no copy when this value owns its storage).
  public mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
    makeUnique()
    let bytes = count * dataType.size
    return try body(UnsafeMutableRawBufferPointer(start: ccv_nnc_tensor_data_ptr(storage.handle), count: bytes))
  }

  /// Replace the elements (converted to this tensor's type).
  public mutating func assign(_ values: [Float]) throws {
    makeUnique()
    try copyIn(values, Int32(CCV_32F))
  }
  public mutating func assign(doubles values: [Double]) throws {
    makeUnique()
    try copyIn(values, Int32(CCV_64F))
  }

  public var description: String { "Tensor(\(shape), \(dataType), \(format)\(isView ? ", view" : ""))" }

  private func copyIn<T>(_ values: [T], _ dt: Int32) throws {
    let rc = values.withUnsafeBytes { ccv_nnc_tensor_copy_from(storage.handle, $0.baseAddress, dt, values.count) }
    if rc != 0 { throw NNCError.last(code: NNCError.invalid, fallback: "ccv_nnc_tensor_copy_from failed") }
  }
  private func copyOut<T: Numeric>(_: T.Type, _ dt: Int32) -> [T] {
    let n = count
    return [T](unsafeUninitializedCapacity: n) { buffer, initialized in
      let rc = ccv_nnc_tensor_copy_to(storage.handle, buffer.baseAddress, dt, n)
      initialized = rc == 0 ? n : 0
    }
  }
}

extension TensorStorage {
  /// A packed tensor of the same shape and type holding the same elements.
  func packedCopy() -> TensorStorage {
    var p = handle.pointee.info
    // Plain tensors keep a matrix step in a spare dim entry: shape only.
    _ = ccv_nnc_tensor_get_params(handle, &p)
    let copy = try! TensorStorage(params: p)
    let n = withUnsafePointer(to: p) { ccv_nnc_tensor_param_count($0) }
    let dt = p.datatype
    if base == nil {
      let bytes = withUnsafePointer(to: p) { ccv_nnc_tensor_param_data_size($0) }
      _ = bytes
      let elementBytes = Int(n) * (DataType(ccv: dt)?.size ?? 0)
      copy.handle.pointee.data.u8.update(from: handle.pointee.data.u8, count: elementBytes)
    } else {
      // Strided: copy_to reads the view in row-major order into the packed copy.
      _ = ccv_nnc_tensor_copy_to(handle, ccv_nnc_tensor_data_ptr(copy.handle), dt, Int(n))
    }
    return copy
  }
}
