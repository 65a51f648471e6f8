import CNNC
import Foundation
import XCTest

@testable import NNC

final class DynamicGraphTests: XCTestCase {
  func testExecBackwardAgainstClosedForm() throws {
    var rng = Rng(21)
    let xv = rng.floats(3 * 4), wv = rng.floats(2 * 4)
    let g = try DynamicGraph()
    let x = try g.variable(try Tensor(xv, shape: [3, 4]))
    let w = try g.variable(try Tensor(wv, shape: [2, 4]))
    // y = x w^T; l = sum(y * y)
    let y = try g.exec(.gemm(transposeB: (0, 1)), [x, w])[0]
    XCTAssertEqual(y.params.shape, [3, 2])
    let yy = try g.exec(.ewprod(), [y, y])[0]
    let l = try g.exec(try .reduceSum(axes: [0, 1]), [yy])[0]
    let yvals = try y.value().floats
    XCTAssertEqual(Double(try l.value().floats[0]), yvals.map { Double($0) * Double($0) }.reduce(0, +), accuracy: 1e-5)
    // dl/dw = 2 y^T x
    let grads = try g.backward([l], wrt: [w, x])
    let dw = try grads[0].value().floats
    for j in 0..<2 {
      for k in 0..<4 {
        var s = 0.0
        for i in 0..<3 { s += 2 * Double(yvals[i * 2 + j]) * Double(xv[i * 4 + k]) }
        XCTAssertEqual(Double(dw[j * 4 + k]), s, accuracy: 1e-4)
      }
    }
    // dl/dx = 2 y w
    let dx = try grads[1].value().floats
    for i in 0..<3 {
      for k in 0..<4 {
        var s = 0.0
        for j in 0..<2 { s += 2 * Double(yvals[i * 2 + j]) * Double(wv[j * 4 + k]) }
        XCTAssertEqual(Double(dx[i * 4 + k]), s, accuracy: 1e-4)
      }
    }
  }

  func testMinimizeAndErrors() throws {
    let g = try DynamicGraph()
    let x0: [Float] = [1, -2, 0.5]
    let x = try g.variable(try Tensor(x0, shape: [3]))
    let opt = Optimizer(.sgd(rate: 0.1))
    let sq = try g.exec(.ewprod(), [x, x])[0]
    let l = try g.exec(try .reduceSum(axes: [0]), [sq])[0]
    try g.minimize(opt, losses: [l], parameters: [x])
    assertClose(try x.value().floats, x0.map { $0 * 0.8 })
    // A shape mismatch: the C message comes through.
    let a = try g.variable(try Tensor(shape: [2, 3]))
    let b = try g.variable(try Tensor(shape: [4, 5]))
    XCTAssertThrowsError(try g.exec(.gemm(), [a, b])) { e in
      XCTAssertFalse((e as! NNCError).message.isEmpty, "\(e)")
    }
    let other = try DynamicGraph()
    let c = try other.variable(try Tensor(shape: [3]))
    XCTAssertThrowsError(try g.exec(.relu(), [c])) { e in
      XCTAssertTrue((e as! NNCError).message.contains("another"), "\(e)")
    }
  }

  func testVariablesFreedByDeinit() throws {
    let before = NNC.liveObjectCount()
    do {
      let g = try DynamicGraph()
      let x = try g.variable(try Tensor([1, 2, 3, 4], shape: [4]))
      for _ in 0..<10_000 {
        let y = try g.exec(.scalarMul(2), [x])[0]
        _ = y
      }
      XCTAssertEqual(NNC.liveObjectCount(.tensorVariable) - 1 >= 0, true)
      assertClose(try g.exec(.scalarMul(2), [x])[0].value().floats, [2, 4, 6, 8])
    }
    XCTAssertEqual(NNC.liveObjectCount(.tensorVariable), 0)
    XCTAssertEqual(NNC.liveObjectCount(.dynamicGraph), 0)
    XCTAssertEqual(NNC.liveObjectCount(), before)
  }
}

final class ModelTests: XCTestCase {
  /// Two classes split by the line x0 + 0.5 x1 = 0.2, as 2-d points.
  func batch(_ rng: inout Rng, _ n: Int) throws -> (Tensor, Tensor, [Int]) {
    var xs = [Float](), labels = [Float](), classes = [Int]()
    for _ in 0..<n {
      let p = rng.uniform() * 2, q = rng.uniform() * 2
      let c = p + 0.5 * q > 0.2 ? 1 : 0
      xs += [p, q]
      labels.append(Float(c))
      classes.append(c)
    }
    return (try Tensor(xs, shape: [n, 2]), try Tensor(labels, shape: [n]), classes)
  }

  func accuracy(_ model: Model, _ x: Tensor, _ classes: [Int]) throws -> Double {
    let z = try model(x).floats
    var right = 0
    for i in classes.indices where (z[i * 2 + 1] > z[i * 2] ? 1 : 0) == classes[i] { right += 1 }
    return Double(right) / Double(classes.count)
  }

  func testMLPTrainsSaveLoad() throws {
    let before = NNC.liveObjectCount()
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("nnc-swift-mlp-\(getpid()).sqlite3").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    do {
      let n = 64
      let mlp = try Model.sequential([.dense(16), .relu(), .dense(16), .relu(), .dense(2)], name: "mlp")
      try mlp.compile(inputs: [TensorParams([n, 2])], minimizer: .sgd(rate: 0.1, momentum: 0.9, scale: 1 / Float(n)),
                      loss: .softmaxCrossEntropy())
      XCTAssertEqual(mlp.parameterCount, 6)
      var rng = Rng(31)
      var outputs = [try Tensor(shape: [n, 2])]
      for _ in 0..<300 {
        let (x, y, _) = try batch(&rng, n)
        try mlp.fit(inputs: [x], fits: [y], outputs: &outputs)
      }
      let (tx, _, tc) = try batch(&rng, n)
      let acc = try accuracy(mlp, tx, tc)
      print("MLP held-out accuracy: \(acc)")
      XCTAssertGreaterThanOrEqual(acc, 0.95, "held-out accuracy")
      let expected = try mlp(tx).floats
      try mlp.write(to: path)
      // A second model of the same structure, read back: the same outputs.
      let again = try Model.sequential([.dense(16), .relu(), .dense(16), .relu(), .dense(2)], name: "mlp")
      try again.compile(inputs: [TensorParams([n, 2])], minimizer: .sgd(rate: 0.1), loss: .softmaxCrossEntropy())
      XCTAssertNotEqual(try again(tx).floats, expected)
      try again.read(from: path)
      XCTAssertEqual(try again(tx).floats, expected)
      // Bad input: the C message.
      XCTAssertThrowsError(try mlp.fit(inputs: [try Tensor(shape: [n, 3])], fits: [try Tensor(shape: [n])], outputs: &outputs)) { e in
        XCTAssertFalse((e as! NNCError).message.isEmpty)
      }
      XCTAssertThrowsError(try again.read(from: "/nonexistent/dir/file.sqlite3"))
      let child = try Model.relu()
      _ = try Model.sequential([child])
      XCTAssertThrowsError(try Model.sequential([child])) { e in
        XCTAssertTrue((e as! NNCError).message.contains("belongs"))
      }
    }
    XCTAssertEqual(NNC.liveObjectCount(.model), 0)
    XCTAssertEqual(NNC.liveObjectCount(), before)
  }

  /// A dense-relu-dense model's output from its own parameters, by hand in doubles.
  func testForwardAgainstItsParameters() throws {
    var rng = Rng(41)
    let m = try Model.sequential([.dense(5), .relu(), .dense(3)])
    try m.compile(inputs: [TensorParams([4, 6])], minimizer: .sgd(rate: 0), loss: .mse())
    let w1 = try m.parameter(.weight, index: 0), b1 = try m.parameter(.bias, index: 0)
    let w2 = try m.parameter(.weight, index: 1)
    XCTAssertEqual(w1.shape, [5, 6])
    XCTAssertEqual(w2.shape, [3, 5])
    // A bias set through the binding is the one the model uses.
    let b2v = rng.floats(3)
    try m.setParameter(.bias, index: 1, try Tensor(b2v, shape: [3]))
    XCTAssertEqual(try m.parameter(.bias, index: 1).floats, b2v)
    let x = rng.floats(4 * 6)
    let y = try m(try Tensor(x, shape: [4, 6])).floats
    let (W1, B1, W2) = (w1.doubles, b1.doubles, w2.doubles)
    for i in 0..<4 {
      var h = [Double](repeating: 0, count: 5)
      for j in 0..<5 {
        var s = B1[j]
        for k in 0..<6 { s += Double(x[i * 6 + k]) * W1[j * 6 + k] }
        h[j] = max(s, 0)
      }
      for j in 0..<3 {
        var s = Double(b2v[j])
        for k in 0..<5 { s += h[k] * W2[j * 5 + k] }
        XCTAssertEqual(Double(y[i * 3 + j]), s, accuracy: 1e-5)
      }
    }
    XCTAssertThrowsError(try m.setParameter(.bias, index: 1, try Tensor(shape: [4])))
  }

  func testModelsFreedAfter10000() throws {
    let before = NNC.liveObjectCount()
    for _ in 0..<10_000 {
      _ = try Model.sequential([.dense(4), .relu()])
    }
    XCTAssertEqual(NNC.liveObjectCount(), before)
  }
}
