// Per-call cost of one command through the C# binding against the same call
// from C, in one run: EWSUM on two 1-element float32 tensors, n calls per
// round, the median of several rounds each. bindings/csharp/bench.sh BUILD_DIR
using System;
using System.Diagnostics;
using System.Linq;
using System.Runtime.InteropServices;
using Nnc;

static class Overhead
{
	[DllImport("nnc_cref")]
	static extern double cref_ewsum_ns(int n);

	static double Median(double[] v) { var s = v.OrderBy(x => x).ToArray(); return s[s.Length / 2]; }

	static int Main(string[] args)
	{
		int n = args.Length > 0 ? int.Parse(args[0]) : 1000000;
		int rounds = args.Length > 1 ? int.Parse(args[1]) : 7;
		using (var a = Tensor.FromArray(new float[] { 1 }, 1))
		using (var b = Tensor.FromArray(new float[] { 2 }, 1))
		using (var c = Tensor.Create(DataType.Float32, Format.NHWC, 1))
		{
			var cmd = Cmd.EwSum();
			var ins = new[] { a, b };
			var outs = new[] { c };
			for (int i = 0; i < 10000; i++) cmd.Exec(ins, outs); // JIT and warm up
			var cNs = new double[rounds];
			var csNs = new double[rounds];
			for (int r = 0; r < rounds; r++)
			{
				cNs[r] = cref_ewsum_ns(n);
				var sw = Stopwatch.StartNew();
				for (int i = 0; i < n; i++) cmd.Exec(ins, outs);
				csNs[r] = sw.Elapsed.TotalMilliseconds * 1e6 / n;
			}
			if (c.ToFloatArray()[0] != 3) { Console.Error.WriteLine("wrong sum"); return 1; }
			long before = GC.GetTotalMemory(false);
			for (int i = 0; i < 100000; i++) cmd.Exec(ins, outs);
			long bytes = GC.GetTotalMemory(false) - before;
			double cm = Median(cNs), sm = Median(csNs);
			Console.WriteLine("EWSUM on 1-element float32 tensors, {0} calls x {1} rounds (median)", n, rounds);
			Console.WriteLine("  C (ccv_nnc_cmd_exec)   {0,7:F1} ns/call", cm);
			Console.WriteLine("  C# (Cmd.Exec)          {0,7:F1} ns/call   {1:F2}x C, ~{2:F1} bytes allocated/call", sm, sm / cm, Math.Max(0, bytes) / 100000.0);
		}
		return 0;
	}
}
