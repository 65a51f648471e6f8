// Per-call overhead of one-element commands through the Swift binding
// against the same calls from C, in one process (the C loop is in
// Sources/NNCOverheadC). Build with -c release:
//   NNC_BUILD_DIR=... swift run -c release nnc-overhead [iterations] [rounds]
import Foundation
import NNC
import NNCOverheadC

let args = CommandLine.arguments
let iterations = args.count > 1 ? Int(args[1]) ?? 200_000 : 200_000
let rounds = args.count > 2 ? Int(args[2]) ?? 7 : 7

func best(_ body: () throws -> Void) rethrows -> Double {
  var best = Double.infinity
  for _ in 0..<rounds {
    let t0 = DispatchTime.now().uptimeNanoseconds
    try body()
    best = min(best, Double(DispatchTime.now().uptimeNanoseconds - t0) / Double(iterations))
  }
  return best
}

func cBest(_ which: Int32) -> Double {
  // Before and after the Swift loops, so drift in the machine's load shows on both sides.
  let t = nnc_overhead_c_ns(which, Int32(iterations), Int32(rounds))
  precondition(t > 0, "wrong C result")
  return t
}

let a = try Tensor([1.5], shape: [1])
var b = try Tensor(shape: [1])
print("one-element commands, best of \(rounds) x \(iterations) calls, ns per call")
for (which, name, cmd) in [(Int32(0), "SCALAR_MUL", Command.scalarMul(2)), (Int32(1), "EWSUM", Command.ewsum())] {
  let c0 = cBest(which)
  let single: Double
  if which == 0 {
    single = try best { for _ in 0..<iterations { try cmd.exec(a, into: &b) } }
  } else {
    single = .nan
  }
  var outs = [b]
  let inputs = which == 0 ? [a] : [a, a]
  let general = try best { for _ in 0..<iterations { try cmd.exec(inputs: inputs, outputs: &outs) } }
  precondition(outs[0].floats == [3], "wrong Swift result")
  let c = min(c0, cBest(which))
  print(String(format: "%@  C ccv_nnc_cmd_exec %7.1f", name.padding(toLength: 10, withPad: " ", startingAt: 0), c))
  if !single.isNaN { print(String(format: "            Swift cmd.exec(a, into: &b)            %7.1f  (%.2fx C)", single, single / c)) }
  print(String(format: "            Swift cmd.exec(inputs:, outputs: &bs)  %7.1f  (%.2fx C)", general, general / c))
}
