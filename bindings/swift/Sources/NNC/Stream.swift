// Streams: commands queued on one run in order, asynchronously to the caller.
import CNNC
import Foundation

/// A CPU stream (ccv_nnc_stream_context_t). Tensors used by a queued command
/// are kept alive until `wait()` returns; deinit waits, then frees.
public final class StreamContext: @unchecked Sendable {
  let handle: OpaquePointer
  private let lock = NSLock()
  private var pending: [TensorStorage] = []

  public init() throws {
    _ = NNC.initialized
    guard let s = ccv_nnc_stream_context_new(Int32(CCV_STREAM_CONTEXT_CPU)) else {
      throw NNCError.last(code: NNCError.invalid, fallback: "ccv_nnc_stream_context_new failed")
    }
    handle = s
  }

  func keepAlive(_ storages: [TensorStorage]) {
    lock.lock()
    pending.append(contentsOf: storages)
    lock.unlock()
  }

  /// Block until every queued command has run; throws what a queued command reported
  /// (the stream then runs what is queued next).
  public func wait() throws {
    ccv_nnc_stream_context_wait(handle)
    let failed = ccv_nnc_error_message().pointee != 0
    let error = failed ? NNCError.last(code: NNCError.invalid, fallback: "a queued command failed") : nil
    // The failure is this error now: taken from the stream, so the C library
    // does not also return it from the next command.
    if failed { _ = ccv_nnc_stream_context_error(handle) }
    lock.lock()
    pending.removeAll()
    lock.unlock()
    if let error { throw error }
  }

  deinit {
    ccv_nnc_stream_context_wait(handle)
    ccv_nnc_stream_context_free(handle)
  }
}
