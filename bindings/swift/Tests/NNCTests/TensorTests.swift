import CNNC
import Foundation
import XCTest

@testable import NNC

final class TensorTests: XCTestCase {
  func testABIAndSizes() {
    XCTAssertEqual(NNC.abiVersion, Int(CCV_NNC_ABI_VERSION))
    XCTAssertEqual(ccv_nnc_type_size(Int32(CCV_NNC_TYPE_CMD)), MemoryLayout<ccv_nnc_cmd_t>.size)
    XCTAssertEqual(ccv_nnc_type_size(Int32(CCV_NNC_TYPE_TENSOR_PARAM)), MemoryLayout<ccv_nnc_tensor_param_t>.size)
    XCTAssertEqual(ccv_nnc_type_size(Int32(CCV_NNC_TYPE_HINT)), MemoryLayout<ccv_nnc_hint_t>.size)
    XCTAssertEqual(ccv_nnc_type_size(Int32(CCV_NNC_TYPE_TENSOR)), MemoryLayout<ccv_nnc_tensor_t>.size)
  }

  func testRoundTripAndConversion() throws {
    var rng = Rng(1)
    let values = rng.floats(2 * 3 * 5)
    let t = try Tensor(values, shape: [2, 3, 5])
    XCTAssertEqual(t.shape, [2, 3, 5])
    XCTAssertEqual(t.dataType, .float32)
    XCTAssertEqual(t.format, .nhwc)
    XCTAssertEqual(t.floats, values)
    // Stored as doubles, read back as floats: the same numbers.
    let d = try Tensor(doubles: values.map(Double.init), shape: [5, 6], format: .nchw)
    XCTAssertEqual(d.dataType, .float64)
    XCTAssertEqual(d.format, .nchw)
    XCTAssertEqual(d.floats, values)
    XCTAssertEqual(d.doubles, values.map(Double.init))
    // Half precision rounds: within half's precision of the input.
    let h = try Tensor(values, shape: [30], dataType: .float16)
    assertClose(h.floats, values, tolerance: 1e-3)
  }

  func testCopyOnWrite() throws {
    let a = try Tensor([1, 2, 3, 4], shape: [4])
    var b = a
    XCTAssertEqual(a.handle, b.handle, "a copy shares storage until written")
    try b.assign([5, 6, 7, 8])
    XCTAssertNotEqual(a.handle, b.handle)
    XCTAssertEqual(a.floats, [1, 2, 3, 4])
    XCTAssertEqual(b.floats, [5, 6, 7, 8])
    // A unique value is written in place.
    let before = b.handle
    try b.assign([9, 9, 9, 9])
    XCTAssertEqual(b.handle, before)
  }

  func testViews() throws {
    let values = (0..<20).map(Float.init)
    var base = try Tensor(values, shape: [4, 5])
    let v = try base.view(offset: [1, 2], shape: [2, 3])
    XCTAssertTrue(v.isView)
    XCTAssertEqual(v.shape, [2, 3])
    XCTAssertEqual(v.strides, [5, 1])
    XCTAssertEqual(v.floats, [7, 8, 9, 12, 13, 14])
    // No copy: the view's first element is inside the base's memory.
    XCTAssertEqual(ccv_nnc_tensor_data_ptr(v.handle), ccv_nnc_tensor_data_ptr(base.handle)! + 7 * 4)
    // A command reads the view in place.
    let sum = try Command.reduceSum(axes: [0])(v)[0]
    XCTAssertEqual(sum.floats, [19, 21, 23])
    // Writing the base leaves the view as it was (the base copies first).
    try base.assign([Float](repeating: 0, count: 20))
    XCTAssertEqual(v.floats, [7, 8, 9, 12, 13, 14])
    // Writing the view gives it its own packed copy.
    var w = v
    try w.assign([1, 1, 1, 1, 1, 1] as [Float])
    XCTAssertFalse(w.isView)
    XCTAssertEqual(v.floats, [7, 8, 9, 12, 13, 14])
    // A window outside the tensor: the C message.
    XCTAssertThrowsError(try base.view(offset: [10, 0], shape: [2, 3])) { e in
      XCTAssertTrue((e as! NNCError).message.contains("outside"), "\(e)")
    }
  }

  func testMutableViewWritesThrough() throws {
    var big = try Tensor([Float](repeating: 0, count: 12), shape: [3, 4])
    let before = big
    let x = try Tensor([1, -2, 3, -4], shape: [2, 2])
    var kept: Tensor? = nil
    try big.withMutableView(offset: [1, 1], shape: [2, 2]) { slice in
      try Command.relu().exec(x, into: &slice)  // the output lands inside `big`
      kept = slice
    }
    XCTAssertEqual(big.floats, [0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0])
    XCTAssertEqual(before.floats, [Float](repeating: 0, count: 12), "the earlier copy is untouched")
    // The escaped view no longer writes through.
    var k = kept!
    try k.assign([9, 9, 9, 9])
    XCTAssertEqual(big.floats, [0, 0, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0])
    XCTAssertEqual(k.floats, [9, 9, 9, 9])
  }

  func testBadShapeThrowsTheCMessage() throws {
    XCTAssertThrowsError(try Tensor(shape: [2, 0, 3])) { e in
      let err = e as! NNCError
      XCTAssertEqual(err.code, NNCError.invalid)
      XCTAssertTrue(err.message.contains("dimension 1"), err.message)
    }
    XCTAssertThrowsError(try Tensor([1, 2, 3], shape: [2, 2])) { e in
      XCTAssertTrue((e as! NNCError).message.contains("count 3"), "\(e)")
    }
  }

  func testTensorPassedBetweenThreads() throws {
    var rng = Rng(7)
    let values = rng.floats(1000)
    let t = try Tensor(values, shape: [10, 100])
    let expected = values.reduce(0, +)
    final class Results: @unchecked Sendable {
      let lock = NSLock()
      var sums: [Float] = []
      var copies: [Tensor] = []
    }
    let box = Results()
    let group = DispatchGroup()
    for k in 0..<8 {
      group.enter()
      Thread.detachNewThread {
        // Each thread reads the shared tensor, and writes its own copy.
        var mine = t
        let s = mine.floats.reduce(0, +)
        try! mine.assign([Float](repeating: Float(k), count: 1000))
        box.lock.lock()
        box.sums.append(s)
        box.copies.append(mine)
        box.lock.unlock()
        group.leave()
      }
    }
    group.wait()
    XCTAssertEqual(box.sums.count, 8)
    for r in box.sums { XCTAssertEqual(r, expected) }
    XCTAssertEqual(t.floats, values, "the shared tensor is untouched")
    XCTAssertEqual(Set(box.copies.map { $0.floats[0] }), Set((0..<8).map(Float.init)))
  }

  func testNoLeakAfter10000() throws {
    let before = NNC.liveObjectCount()
    let tensorsBefore = NNC.liveObjectCount(.tensor)
    for i in 0..<10_000 {
      var t = try Tensor([Float(i)], shape: [1])
      let u = t
      try t.assign([1] as [Float])  // copy on write: two tensors alive here
      if i % 2 == 0 { _ = try t.view(offset: [0], shape: [1]) }
      XCTAssertEqual(u.floats[0], Float(i))
    }
    XCTAssertEqual(NNC.liveObjectCount(.tensor), tensorsBefore)
    XCTAssertEqual(NNC.liveObjectCount(), before)
  }
}
