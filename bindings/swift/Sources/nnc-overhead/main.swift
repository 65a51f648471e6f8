// Per-call overhead of a one-element command (SCALAR_MUL) through the Swift
// binding against the same call from C, in one process.
//   swift run -c release nnc-overhead [iterations] [rounds]
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
    let per = Double(DispatchTime.now().uptimeNanoseconds - t0) / Double(iterations)
    best = min(best, per)
  }
  return best
}

let a = try Tensor([1.5], shape: [1])
var b = try Tensor(shape: [1])
let cmd = Command.scalarMul(2)
let c = nnc_overhead_c_ns(Int32(iterations), Int32(rounds))
let single = try best { for _ in 0..<iterations { try cmd.exec(a, into: &b) } }
precondition(b.floats == [3], "wrong result")
var outs = [b]
let general = try best { for _ in 0..<iterations { try cmd.exec(inputs: [a], outputs: &outs) } }
precondition(outs[0].floats == [3], "wrong result")
let c2 = nnc_overhead_c_ns(Int32(iterations), Int32(rounds))
let cBest = min(c, c2)
print("one-element SCALAR_MUL, best of \(rounds) x \(iterations) calls, ns per call")
print(String(format: "  C   ccv_nnc_cmd_exec                       %8.1f", cBest))
print(String(format: "  Swift cmd.exec(a, into: &b)                %8.1f  (%.2fx C)", single, single / cBest))
print(String(format: "  Swift cmd.exec(inputs: [a], outputs: &bs)  %8.1f  (%.2fx C)", general, general / cBest))
