import CNNC
import XCTest

@testable import NNC

/// Deterministic pseudo-random numbers (splitmix64) for test inputs.
struct Rng {
  var state: UInt64
  init(_ seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
  /// Uniform in [-1, 1).
  mutating func uniform() -> Float { Float(next() >> 40) / Float(1 << 23) - 1 }
  mutating func floats(_ n: Int) -> [Float] { (0..<n).map { _ in uniform() } }
}

/// A C tensor made and filled through the C API directly, freed by the caller.
func cTensor(_ values: [Float], _ dims: [Int32]) -> UnsafeMutablePointer<ccv_nnc_tensor_t> {
  let p = ccv_nnc_tensor_param_make(Int32(CCV_TENSOR_CPU_MEMORY | CCV_COMPUTE_DEVICE_ANY), Int32(CCV_TENSOR_FORMAT_NHWC),
                                    Int32(CCV_32F), Int32(dims.count), dims)
  let t = ccv_nnc_tensor_new(nil, p, 0)!
  if !values.isEmpty { _ = ccv_nnc_tensor_copy_from(t, values, Int32(CCV_32F), values.count) }
  return t
}

func cValues(_ t: UnsafeMutablePointer<ccv_nnc_tensor_t>) -> [Float] {
  var p = ccv_nnc_tensor_param_t()
  _ = ccv_nnc_tensor_get_params(t, &p)
  let n = ccv_nnc_tensor_param_count(&p)
  var out = [Float](repeating: .nan, count: n)
  _ = ccv_nnc_tensor_copy_to(t, &out, Int32(CCV_32F), n)
  return out
}

/// Run `cmd` through the C API on C copies of `inputs`, into fresh outputs of `outputDims`.
func cExec(_ cmd: ccv_nnc_cmd_t, _ hint: ccv_nnc_hint_t = ccv_nnc_hint_t(), _ inputs: [([Float], [Int32])],
           _ outputDims: [[Int32]]) -> (Int32, [[Float]]) {
  let ins = inputs.map { cTensor($0.0, $0.1) }
  let outs = outputDims.map { cTensor([], $0) }
  let insO: [UnsafeMutablePointer<ccv_nnc_tensor_t>?] = ins
  let outsO: [UnsafeMutablePointer<ccv_nnc_tensor_t>?] = outs
  let rc = ccv_nnc_cmd_exec(cmd, hint, 0, insO, Int32(ins.count), outsO, Int32(outs.count), nil)
  let values = outs.map { cValues($0) }
  ins.forEach { ccv_nnc_tensor_free($0) }
  outs.forEach { ccv_nnc_tensor_free($0) }
  return (rc, values)
}

func assertClose(_ a: [Float], _ b: [Float], tolerance: Float = 1e-5, file: StaticString = #filePath, line: UInt = #line) {
  XCTAssertEqual(a.count, b.count, "counts", file: file, line: line)
  for i in 0..<min(a.count, b.count) where !(abs(a[i] - b[i]) <= tolerance * max(1, abs(b[i]))) {
    XCTFail("element \(i): \(a[i]) vs \(b[i])", file: file, line: line)
    return
  }
}
