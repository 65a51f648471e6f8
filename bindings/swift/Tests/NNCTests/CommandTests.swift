import CNNC
import XCTest

@testable import NNC

/// Each builder's command against the C API called directly on the same
/// inputs, and the bytes of each command against the C constructor.
final class CommandTests: XCTestCase {
  func testGemmAgainstCAndDoubleReference() throws {
    var rng = Rng(11)
    let a = rng.floats(3 * 7), w = rng.floats(5 * 7), bias = rng.floats(5)
    let gemm = Command.gemm(transposeB: (0, 1))
    let out = try gemm(try Tensor(a, shape: [3, 7]), try Tensor(w, shape: [5, 7]), try Tensor(bias, shape: [5]))[0]
    XCTAssertEqual(out.shape, [3, 5])
    let (rc, c) = cExec(ccv_nnc_cmd_gemm_forward(nil, [0, 1]), ccv_nnc_hint_t(), [(a, [3, 7]), (w, [5, 7]), (bias, [5])], [[3, 5]])
    XCTAssertEqual(rc, 0)
    XCTAssertEqual(out.floats, c[0], "the binding gives the C result bit for bit")
    var ref = [Float]()
    for i in 0..<3 {
      for j in 0..<5 {
        var s = Double(bias[j])
        for k in 0..<7 { s += Double(a[i * 7 + k]) * Double(w[j * 7 + k]) }
        ref.append(Float(s))
      }
    }
    assertClose(out.floats, ref, tolerance: 1e-5)
  }

  func testElementwiseFamiliesAgainstC() throws {
    var rng = Rng(12)
    let x = rng.floats(2 * 3 * 4).map { $0 * 3 }
    let y = rng.floats(2 * 3 * 4).map { abs($0) + 0.5 }
    let dims: [Int32] = [2, 3, 4]
    let unary: [(Command, ccv_nnc_cmd_t, [Float])] = [
      (.relu(), ccv_nnc_cmd_relu_forward(), x), (.sigmoid(), ccv_nnc_cmd_sigmoid_forward(), x),
      (.tanh(), ccv_nnc_cmd_tanh_forward(), x), (.gelu(), ccv_nnc_cmd_gelu_forward(0), x),
      (.gelu(tanhApproximation: true), ccv_nnc_cmd_gelu_forward(1), x), (.swish(), ccv_nnc_cmd_swish_forward(), x),
      (.leakyRelu(0.2), ccv_nnc_cmd_leaky_relu_forward(0.2), x), (.softmax(), ccv_nnc_cmd_softmax_forward(), x),
      (.ewexp(), ccv_nnc_cmd_ewexp_forward(), x), (.ewlog(), ccv_nnc_cmd_ewlog_forward(), y),
      (.ewsqrt(), ccv_nnc_cmd_ewsqrt_forward(), y), (.scalarMul(-1.5), ccv_nnc_cmd_scalar_mul_forward(-1.5), x),
      (.dataTransfer(), ccv_nnc_cmd_data_transfer_forward(), x),
    ]
    for (cmd, c, input) in unary {
      XCTAssertEqual(withUnsafeBytes(of: cmd.raw) { Array($0) }, withUnsafeBytes(of: c) { Array($0) })
      let out = try cmd(try Tensor(input, shape: [2, 3, 4]))[0]
      let (rc, ref) = cExec(c, ccv_nnc_hint_t(), [(input, dims)], [dims])
      XCTAssertEqual(rc, 0)
      XCTAssertEqual(out.floats, ref[0], "command \(c.cmd)")
    }
    let binary: [(Command, ccv_nnc_cmd_t)] = [
      (.ewsum(), ccv_nnc_cmd_ewsum_forward()), (.ewprod(), ccv_nnc_cmd_ewprod_forward()),
      (.ewdiv(), ccv_nnc_cmd_ewdiv_forward()), (.add(0.5, -2), ccv_nnc_cmd_add_forward(0.5, -2)),
      (.mul(3), ccv_nnc_cmd_mul_forward(3)),
    ]
    for (cmd, c) in binary {
      let out = try cmd(try Tensor(x, shape: [2, 3, 4]), try Tensor(y, shape: [2, 3, 4]))[0]
      let (rc, ref) = cExec(c, ccv_nnc_hint_t(), [(x, dims), (y, dims)], [dims])
      XCTAssertEqual(rc, 0)
      XCTAssertEqual(out.floats, ref[0], "command \(c.cmd)")
    }
    // Closed forms for two of them.
    let sum = try Command.ewsum()(try Tensor(x, shape: [24]), try Tensor(y, shape: [24]))[0]
    assertClose(sum.floats, zip(x, y).map { $0 + $1 })
    let relu = try Command.relu()(try Tensor(x, shape: [24]))[0]
    XCTAssertEqual(relu.floats, x.map { max($0, 0) })
  }

  func testConvolutionAndPoolingWithHints() throws {
    var rng = Rng(13)
    let x = rng.floats(1 * 6 * 6 * 2), w = rng.floats(3 * 3 * 3 * 2), b = rng.floats(3)
    let conv = try Command.convolution(filters: 3, kernel: [3, 3, 2])
    let hint = try Hint(stride: [1, 1], border: [1, 1])
    let out = try conv(try Tensor(x, shape: [1, 6, 6, 2]), try Tensor(w, shape: [3, 3, 3, 2]), try Tensor(b, shape: [3]),
                       hint: hint)[0]
    XCTAssertEqual(out.shape, [1, 6, 6, 3])
    let (rc, ref) = cExec(ccv_nnc_cmd_convolution_forward(1, 3, 3, [3, 3, 2]), ccv_nnc_hint_make(2, [1, 1], [1, 1], [1, 1]),
                          [(x, [1, 6, 6, 2]), (w, [3, 3, 3, 2]), (b, [3])], [[1, 6, 6, 3]])
    XCTAssertEqual(rc, 0)
    XCTAssertEqual(out.floats, ref[0])
    // Output (1, 2, c) by hand: sum over the 3x3 window centred there.
    for c in 0..<3 {
      var s = Double(b[c])
      for ky in 0..<3 {
        for kx in 0..<3 {
          let yy = 1 + ky - 1, xx = 2 + kx - 1
          for ch in 0..<2 { s += Double(x[(yy * 6 + xx) * 2 + ch]) * Double(w[((c * 3 + ky) * 3 + kx) * 2 + ch]) }
        }
      }
      XCTAssertEqual(Double(out.floats[(1 * 6 + 2) * 3 + c]), s, accuracy: 1e-5)
    }
    let pooled = try Command.maxPool(2, 2)(out, hint: try Hint(stride: [2, 2]))[0]
    XCTAssertEqual(pooled.shape, [1, 3, 3, 3])
    let o = out.floats
    XCTAssertEqual(pooled.floats[0], max(max(o[0], o[3]), max(o[18], o[21])))
    let avg = try Command.averagePool(2, 2)(out, hint: try Hint(stride: [2, 2]))[0]
    XCTAssertEqual(avg.floats[0], (o[0] + o[3] + o[18] + o[21]) / 4, accuracy: 1e-6)
  }

  func testLossesNormsReductionsAgainstC() throws {
    var rng = Rng(14)
    let logits = rng.floats(4 * 3), labels: [Float] = [0, 2, 1, 2]
    let (loss, probs) = try { () throws -> (Tensor, Tensor) in
      let r = try Command.softmaxCrossEntropy()(try Tensor(logits, shape: [4, 3]), try Tensor(labels, shape: [4]), outputCount: 2)
      return (r[0], r[1])
    }()
    let (rc, ref) = cExec(ccv_nnc_cmd_softmax_crossentropy_forward(0, 1), ccv_nnc_hint_t(), [(logits, [4, 3]), (labels, [4])],
                          [[4], [4, 3]])
    XCTAssertEqual(rc, 0)
    XCTAssertEqual(loss.floats, ref[0])
    XCTAssertEqual(probs.floats, ref[1])
    for i in 0..<4 {
      let row = logits[(i * 3)..<(i * 3 + 3)].map(Double.init)
      let m = row.max()!
      let lse = log(row.map { exp($0 - m) }.reduce(0, +)) + m
      XCTAssertEqual(Double(loss.floats[i]), lse - row[Int(labels[i])], accuracy: 1e-5)
    }
    let x = rng.floats(4 * 5), y = rng.floats(4 * 5)
    let mse = try Command.mse(.sum)(try Tensor(x, shape: [4, 5]), try Tensor(y, shape: [4, 5]))[0]
    let (rc2, ref2) = cExec(ccv_nnc_cmd_mse_forward(Int32(CCV_NNC_MSE_REDUCE_SUM)), ccv_nnc_hint_t(), [(x, [4, 5]), (y, [4, 5])], [[4, 1]])
    XCTAssertEqual(rc2, 0)
    XCTAssertEqual(mse.floats, ref2[0])
    let mean = try Command.reduceMean(axes: [1])(try Tensor(x, shape: [4, 5]))[0]
    XCTAssertEqual(mean.shape, [4, 1])
    for i in 0..<4 { XCTAssertEqual(mean.floats[i], x[(i * 5)..<(i * 5 + 5)].reduce(0, +) / 5, accuracy: 1e-6) }
    let t = try Command.transpose(0, 1)(try Tensor(x, shape: [4, 5]))[0]
    XCTAssertEqual(t.shape, [5, 4])
    XCTAssertEqual(t.floats[1 * 4 + 2], x[2 * 5 + 1])
    // Layer norm over the last axis with scale 1 and bias 0: zero mean per row.
    let ln = try Command.layerNorm(epsilon: 1e-5, elementwiseAffine: true, axes: [1])
    let ones = try Tensor([Float](repeating: 1, count: 5), shape: [1, 5])
    let zeros = try Tensor([Float](repeating: 0, count: 5), shape: [1, 5])
    let lnOut = try ln(try Tensor(x, shape: [4, 5]), ones, zeros, outputCount: 3)
    let (rc3, ref3) = cExec(ccv_nnc_cmd_layer_norm_forward(1e-5, 1, 1, [1]), ccv_nnc_hint_t(),
                            [(x, [4, 5]), ([Float](repeating: 1, count: 5), [1, 5]), ([Float](repeating: 0, count: 5), [1, 5])],
                            [[4, 5], [4, 1], [4, 1]])
    XCTAssertEqual(rc3, 0)
    XCTAssertEqual(lnOut[0].floats, ref3[0])
    XCTAssertEqual(Double(lnOut[0].floats[0..<5].reduce(0, +)), 0, accuracy: 1e-5)
    var filled = [try Tensor(shape: [2, 3])]
    try Command.set(2.5).exec(inputs: [], outputs: &filled)
    XCTAssertEqual(filled[0].floats, [Float](repeating: 2.5, count: 6))
  }

  func testOptimizersAgainstC() throws {
    var rng = Rng(15)
    let g = rng.floats(6), w = rng.floats(6), m = rng.floats(6)
    for (cmd, c) in [(Command.sgd(rate: 0.1, momentum: 0.9), ccv_nnc_cmd_sgd_forward(0, 0.1, 1, 0, 0.9, 0))] {
      XCTAssertEqual(withUnsafeBytes(of: cmd.raw) { Array($0) }, withUnsafeBytes(of: c) { Array($0) })
      var outs = [try Tensor(shape: [6]), try Tensor(shape: [6])]
      try cmd.exec(inputs: [try Tensor(g, shape: [6]), try Tensor(w, shape: [6]), try Tensor(m, shape: [6])], outputs: &outs)
      let (rc, ref) = cExec(c, ccv_nnc_hint_t(), [(g, [6]), (w, [6]), (m, [6])], [[6], [6]])
      XCTAssertEqual(rc, 0)
      XCTAssertEqual(outs[0].floats, ref[0])
      XCTAssertEqual(outs[1].floats, ref[1])
    }
    let adam = Command.adam(step: 2, rate: 0.01)
    let cAdam = ccv_nnc_cmd_adam_forward(2, 0.01, 0.9, 0.999, 0, 1e-8, 0)
    XCTAssertEqual(withUnsafeBytes(of: adam.raw) { Array($0) }, withUnsafeBytes(of: cAdam) { Array($0) })
    let adamw = Command.adamw(step: 3, rate: 0.02, decay: 0.1)
    let cAdamw = ccv_nnc_cmd_adamw_forward(3, 0.02, 0.9, 0.999, 0.1, 1e-8, 0)
    XCTAssertEqual(withUnsafeBytes(of: adamw.raw) { Array($0) }, withUnsafeBytes(of: cAdamw) { Array($0) })
    let bn = try Command.batchNorm(axes: [0, 1, 2])
    XCTAssertEqual(withUnsafeBytes(of: bn.raw) { Array($0) },
                   withUnsafeBytes(of: ccv_nnc_cmd_batch_norm_forward(1e-5, 0, 0.9, 3, [0, 1, 2])) { Array($0) })
  }

  func testErrorsCarryTheCMessage() throws {
    let a = try Tensor(shape: [3, 4]), w = try Tensor(shape: [5, 6])
    var outs = [try Tensor(shape: [3, 5])]
    // The same bad call through the C API directly, for its code and message.
    let ca = cTensor([], [3, 4]), cw = cTensor([], [5, 6]), cc = cTensor([], [3, 5])
    defer { [ca, cw, cc].forEach { ccv_nnc_tensor_free($0) } }
    let cins: [UnsafeMutablePointer<ccv_nnc_tensor_t>?] = [ca, cw]
    var couts: [UnsafeMutablePointer<ccv_nnc_tensor_t>?] = [cc]
    let crc = ccv_nnc_cmd_exec(ccv_nnc_cmd_gemm_forward(nil, [0, 1]), ccv_nnc_hint_t(), 0, cins, 2, &couts, 1, nil)
    let cmessage = String(cString: ccv_nnc_error_message())
    XCTAssertNotEqual(crc, 0)
    XCTAssertFalse(cmessage.isEmpty)
    XCTAssertThrowsError(try Command.gemm(transposeB: (0, 1)).exec(inputs: [a, w], outputs: &outs)) { e in
      let err = e as! NNCError
      XCTAssertEqual(err.code, Int(crc))
      XCTAssertEqual(err.message, cmessage)
    }
    XCTAssertThrowsError(try Command.reduceSum(axes: Array(repeating: 0, count: 20))) { e in
      XCTAssertTrue((e as! NNCError).message.contains("axis_count"), "\(e)")
    }
    XCTAssertThrowsError(try Command.convolution(filters: 4, kernel: [])) { e in
      XCTAssertTrue((e as! NNCError).message.contains("kernel_rank"), "\(e)")
    }
  }

  func testStream() throws {
    var rng = Rng(16)
    let x = rng.floats(64)
    let stream = try StreamContext()
    var outs = [try Tensor(shape: [64])]
    try Command.relu().exec(inputs: [try Tensor(x, shape: [64])], outputs: &outs, stream: stream)
    try stream.wait()
    XCTAssertEqual(outs[0].floats, x.map { max($0, 0) })
    // A failure while running (a label outside the classes, found by the
    // kernel on the stream's thread) is wait's error, and only wait's: the
    // stream then runs the next command.
    var sce = [try Tensor(shape: [3, 1]), try Tensor(shape: [3, 5])]
    try Command.softmaxCrossEntropy().exec(
      inputs: [try Tensor(shape: [3, 5]), try Tensor([1, 9, 2], shape: [3])], outputs: &sce, stream: stream)
    XCTAssertThrowsError(try stream.wait()) { e in
      XCTAssertTrue((e as! NNCError).message.contains("outside"), "\(e)")
    }
    try Command.relu().exec(inputs: [try Tensor(x, shape: [64])], outputs: &outs, stream: stream)
    try stream.wait()
    XCTAssertEqual(outs[0].floats, x.map { max($0, 0) })
  }
}
