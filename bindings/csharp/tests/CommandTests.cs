using System;
using System.Collections.Generic;
using System.Linq;
using NUnit.Framework;

namespace Nnc.Tests
{
	[TestFixture]
	public class CommandTests
	{
		class Case
		{
			public string Name; public Func<Cmd> Cmd; public int Kind; public float[] P; public T[] In; public int[][] Out; public int Stride, Pad;
		}

		static IEnumerable<Case> Cases()
		{
			var r = new Random(1);
			var x35 = new T(Util.Rand(r, 15), 3, 5);
			var w45 = new T(Util.Rand(r, 20), 4, 5);
			var b4 = new T(Util.Rand(r, 4), 4);
			var img = new T(Util.Rand(r, 2 * 7 * 6 * 3), 2, 7, 6, 3);
			var kern = new T(Util.Rand(r, 4 * 27), 4, 3, 3, 3);
			var pos = Util.Rand(r, 15).Select(v => Math.Abs(v) + 0.1f).ToArray();
			int[] s35 = { 3, 5 };
			yield return new Case { Name = "dense", Cmd = () => Cmd.Gemm(null, new[] { 0, 1 }), Kind = CRef.Dense, In = new[] { x35, w45, b4 }, Out = new[] { new[] { 3, 4 } } };
			yield return new Case { Name = "gemm", Cmd = () => Cmd.Gemm(), Kind = CRef.Gemm, In = new[] { x35, new T(Util.Rand(r, 10), 5, 2) }, Out = new[] { new[] { 3, 2 } } };
			yield return new Case { Name = "conv", Cmd = () => Cmd.Convolution(1, 4, 3, 3, 3), Kind = CRef.Conv, P = new float[] { 1, 4, 3, 3, 3 }, In = new[] { img, kern, new T(Util.Rand(r, 4), 4) }, Out = new[] { new[] { 2, 4, 3, 4 } }, Stride = 2, Pad = 1 };
			yield return new Case { Name = "maxpool", Cmd = () => Cmd.MaxPool(2, 2), Kind = CRef.MaxPool, P = new float[] { 2, 2 }, In = new[] { img }, Out = new[] { new[] { 2, 3, 3, 3 } }, Stride = 2 };
			yield return new Case { Name = "avgpool", Cmd = () => Cmd.AveragePool(3, 3), Kind = CRef.AvgPool, P = new float[] { 3, 3 }, In = new[] { img }, Out = new[] { new[] { 2, 7, 6, 3 } }, Stride = 1, Pad = 1 };
			yield return new Case { Name = "relu", Cmd = Cmd.ReLU, Kind = CRef.ReLU, In = new[] { x35 }, Out = new[] { s35 } };
			yield return new Case { Name = "sigmoid", Cmd = Cmd.Sigmoid, Kind = CRef.Sigmoid, In = new[] { x35 }, Out = new[] { s35 } };
			yield return new Case { Name = "tanh", Cmd = Cmd.Tanh, Kind = CRef.Tanh, In = new[] { x35 }, Out = new[] { s35 } };
			yield return new Case { Name = "gelu", Cmd = () => Cmd.Gelu(true), Kind = CRef.GELU, P = new float[] { 1 }, In = new[] { x35 }, Out = new[] { s35 } };
			yield return new Case { Name = "swish", Cmd = Cmd.Swish, Kind = CRef.Swish, In = new[] { x35 }, Out = new[] { s35 } };
			yield return new Case { Name = "leaky", Cmd = () => Cmd.LeakyReLU(0.2f), Kind = CRef.LeakyReLU, P = new[] { 0.2f }, In = new[] { x35 }, Out = new[] { s35 } };
			yield return new Case { Name = "softmax", Cmd = Cmd.Softmax, Kind = CRef.Softmax, In = new[] { x35 }, Out = new[] { s35 } };
			yield return new Case { Name = "sce", Cmd = () => Cmd.SoftmaxCrossEntropy(), Kind = CRef.SCE, In = new[] { x35, new T(new float[] { 0, 4, 2 }, 3) }, Out = new[] { new[] { 3, 1 }, s35 } };
			yield return new Case { Name = "mse", Cmd = () => Cmd.Mse(), Kind = CRef.MSE, In = new[] { x35, new T(Util.Rand(r, 15), 3, 5) }, Out = new[] { new[] { 3, 1 } } };
			yield return new Case { Name = "ewsum", Cmd = Cmd.EwSum, Kind = CRef.EWSum, In = new[] { x35, new T(Util.Rand(r, 15), 3, 5) }, Out = new[] { s35 } };
			yield return new Case { Name = "ewprod", Cmd = Cmd.EwProd, Kind = CRef.EWProd, In = new[] { x35, new T(Util.Rand(r, 15), 3, 5) }, Out = new[] { s35 } };
			yield return new Case { Name = "ewexp", Cmd = Cmd.EwExp, Kind = CRef.EWExp, In = new[] { x35 }, Out = new[] { s35 } };
			yield return new Case { Name = "add", Cmd = () => Cmd.Add(0.5f, -2), Kind = CRef.Add, P = new[] { 0.5f, -2 }, In = new[] { x35, new T(Util.Rand(r, 5), 1, 5) }, Out = new[] { s35 } };
			yield return new Case { Name = "scalarmul", Cmd = () => Cmd.ScalarMul(3), Kind = CRef.ScalarMul, P = new float[] { 3 }, In = new[] { x35 }, Out = new[] { s35 } };
			yield return new Case { Name = "reducesum", Cmd = () => Cmd.ReduceSum(1), Kind = CRef.ReduceSum, In = new[] { x35 }, Out = new[] { new[] { 3, 1 } } };
			yield return new Case { Name = "layernorm", Cmd = () => Cmd.LayerNorm(1e-5f, true, 1), Kind = CRef.LayerNorm, P = new[] { 1e-5f }, In = new[] { x35, new T(Util.Rand(r, 5), 1, 5), new T(Util.Rand(r, 5), 1, 5) }, Out = new[] { s35, new[] { 3, 1 }, new[] { 3, 1 } } };
			yield return new Case { Name = "batchnorm", Cmd = () => Cmd.BatchNorm(1e-4f, false, 0.9f, 0, 1, 2), Kind = CRef.BatchNorm, P = new[] { 1e-4f, 0.9f },
				In = new[] { img, new T(Util.Rand(r, 3), 3), new T(Util.Rand(r, 3), 3), new T(new float[3], 3), new T(new float[] { 1, 1, 1 }, 3) },
				Out = new[] { new[] { 2, 7, 6, 3 }, new[] { 3 }, new[] { 3 }, new[] { 3 }, new[] { 3 } } };
			yield return new Case { Name = "sgd", Cmd = () => Cmd.Sgd(false, 0.1f, 1, 0.01f, 0.9f, 0), Kind = CRef.SGD, P = new[] { 0.1f, 1, 0.01f, 0.9f, 0 }, In = new[] { x35, new T(Util.Rand(r, 15), 3, 5), new T(Util.Rand(r, 15), 3, 5) }, Out = new[] { s35, s35 } };
			yield return new Case { Name = "adam", Cmd = () => Cmd.Adam(3, 0.01f, 0.9f, 0.999f, 0, 1e-8f), Kind = CRef.Adam, P = new[] { 3, 0.01f, 0.9f, 0.999f, 0, 1e-8f },
				In = new[] { x35, new T(Util.Rand(r, 15), 3, 5), new T(Util.Rand(r, 15), 3, 5), new T(pos, 3, 5) }, Out = new[] { s35, s35, s35 } };
		}

		// Each builder against the same command made with libnnc's macros and run
		// through C directly, on the same inputs: identical results.
		[Test]
		public void BuildersMatchC()
		{
			foreach (var c in Cases())
			{
				var want = c.Out.Select(s => T.Zeros(s)).ToArray();
				var msg = CRef.Exec(c.Kind, c.P, c.In, want, c.Stride, c.Pad);
				Assert.IsNull(msg, c.Name + " in C");
				var ins = c.In.Select(t => Tensor.FromArray(t.Data, t.Shape)).ToArray();
				var outs = c.Out.Select(s => Tensor.Create(DataType.Float32, Format.NHWC, s)).ToArray();
				try
				{
					var hint = c.Stride > 0 ? Hint.Make(new[] { c.Stride, c.Stride }, new[] { c.Pad, c.Pad }, new[] { c.Pad, c.Pad }) : Hint.None;
					c.Cmd().Exec(hint, ins, outs);
					for (int i = 0; i < outs.Length; i++)
						Util.Same(c.Name, outs[i].ToFloatArray(), want[i].Data);
				}
				finally
				{
					foreach (var t in ins.Concat(outs)) t.Dispose();
				}
			}
		}

		[Test]
		public void DenseClosedForm()
		{
			var r = new Random(2);
			const int m = 7, k = 13, n = 5;
			var x = Util.Rand(r, m * k);
			var w = Util.Rand(r, n * k);
			var b = Util.Rand(r, n);
			using (var tx = Tensor.FromArray(x, m, k))
			using (var tw = Tensor.FromArray(w, n, k))
			using (var tb = Tensor.FromArray(b, n))
			using (var ty = Tensor.Create(DataType.Float32, Format.NHWC, m, n))
			{
				Cmd.Gemm(null, new[] { 0, 1 }).Exec(new[] { tx, tw, tb }, new[] { ty });
				var want = new double[m * n];
				for (int i = 0; i < m; i++)
					for (int j = 0; j < n; j++)
					{
						double s = b[j];
						for (int l = 0; l < k; l++) s += (double)x[i * k + l] * w[j * k + l];
						want[i * n + j] = s;
					}
				Util.Close("dense", ty.ToFloatArray(), want, 1e-5);
			}
		}

		[Test]
		public void ReluBackward()
		{
			var r = new Random(3);
			var x = Util.Rand(r, 12);
			var g = Util.Rand(r, 12);
			using (var tx = Tensor.FromArray(x, 3, 4))
			using (var tg = Tensor.FromArray(g, 3, 4))
			using (var ty = Tensor.Create(DataType.Float32, Format.NHWC, 3, 4))
			using (var dx = Tensor.Create(DataType.Float32, Format.NHWC, 3, 4))
			{
				Cmd.ReLU().Exec(new[] { tx }, new[] { ty });
				Cmd.ReLU().Backward().Exec(new[] { tg, null, ty }, new[] { dx });
				Util.Close("relu backward", dx.ToFloatArray(), x.Select((v, i) => v > 0 ? (double)g[i] : 0).ToArray(), 0);
				Assert.AreEqual(Cmd.ReLU().Id | 1, Cmd.ReLU().Backward().Id);
			}
		}

		// A bad shape throws NncException with code Invalid and C's message for the same call.
		[Test]
		public void ErrorMapping()
		{
			var a = new T(new float[6], 2, 3);
			var b = new T(new float[20], 4, 5);
			var cmsg = CRef.Exec(CRef.Gemm, null, new[] { a, b }, new[] { T.Zeros(2, 5) });
			Assert.IsNotNull(cmsg, "C accepted a 2x3 · 4x5 GEMM");
			using (var ta = Tensor.FromArray(a.Data, a.Shape))
			using (var tb = Tensor.FromArray(b.Data, b.Shape))
			using (var tc = Tensor.Create(DataType.Float32, Format.NHWC, 2, 5))
			{
				var e = Assert.Throws<NncException>(() => Cmd.Gemm().Exec(new[] { ta, tb }, new[] { tc }));
				Assert.AreEqual(ErrorCode.Invalid, e.Code);
				Assert.AreEqual(cmsg, e.NativeMessage);
				Assert.AreEqual("GEMM_FORWARD", e.Operation);
				StringAssert.Contains(cmsg, e.Message);
				// The code-returning form leaves the same message readable.
				Assert.AreEqual(-1, Cmd.Gemm().TryExec(new[] { ta, tb }, new[] { tc }));
				Assert.AreEqual(cmsg, Library.LastMessage);
			}
			var bad = Assert.Throws<NncException>(() => Cmd.BatchNorm(1e-5f, false, 0.9f, new int[13]));
			Assert.AreEqual(ErrorCode.Invalid, bad.Code);
			Assert.IsNotEmpty(bad.NativeMessage);
			Assert.Throws<NncException>(() => Hint.Make(new int[13]));
			Assert.Throws<NncException>(() => Tensor.Create(DataType.Float32, Format.NHWC, 2, -1));
			var dt = Assert.Throws<NncException>(() => Tensor.Create((DataType)0x777, Format.NHWC, 2));
			Assert.IsNotEmpty(dt.NativeMessage);
		}

		[Test]
		public void Views()
		{
			var r = new Random(4);
			var data = Util.Rand(r, 42);
			var x = Tensor.FromArray(data, 6, 7);
			var v = x.View(new[] { 1, 2 }, new[] { 4, 4 });
			Assert.IsTrue(v.IsView);
			var got = v.ToFloatArray();
			for (int i = 0; i < 4; i++)
				for (int j = 0; j < 4; j++)
					Assert.AreEqual(data[(i + 1) * 7 + j + 2], got[i * 4 + j]);
			Cmd.ReLU().Exec(new[] { v }, new[] { v });
			var all = x.ToFloatArray();
			for (int i = 0; i < 6; i++)
				for (int j = 0; j < 7; j++)
				{
					var want = data[i * 7 + j];
					if (i >= 1 && i < 5 && j >= 2 && j < 6 && want < 0) want = 0;
					Assert.AreEqual(want, all[i * 7 + j], "(" + i + "," + j + ")");
				}
			var e = Assert.Throws<NncException>(() => x.View(new[] { 4, 4 }, new[] { 4, 4 }));
			Assert.IsNotEmpty(e.NativeMessage);
			// The view keeps its tensor's memory after the tensor is disposed.
			x.Dispose();
			Assert.AreEqual(Math.Max(data[9], 0), v.ToFloatArray()[0]);
			v.Dispose();
		}

		[Test]
		public void Streams()
		{
			var r = new Random(5);
			var a = Util.Rand(r, 1000);
			var b = Util.Rand(r, 1000);
			using (var s = new Stream())
			using (var ta = Tensor.FromArray(a, 1000))
			using (var tb = Tensor.FromArray(b, 1000))
			using (var tc = Tensor.Create(DataType.Float32, Format.NHWC, 1000))
			using (var td = Tensor.Create(DataType.Float32, Format.NHWC, 1000))
			using (var bad = Tensor.Create(DataType.Float32, Format.NHWC, 7))
			{
				Cmd.EwSum().Exec(Hint.None, new[] { ta, tb }, new[] { tc }, s);
				Cmd.EwProd().Exec(Hint.None, new[] { tc, ta }, new[] { td }, s);
				s.Wait();
				Util.Close("stream", td.ToFloatArray(), a.Select((v, i) => (double)((v + b[i]) * v)).ToArray(), 0);
				var e = Assert.Throws<NncException>(() => { Cmd.EwSum().Exec(Hint.None, new[] { ta, tb }, new[] { bad }, s); s.Wait(); });
				Assert.IsNotEmpty(e.NativeMessage);
				// A failure while running (a label outside the classes, found by the kernel on the
				// stream's thread) is Wait's exception, and only Wait's: the stream then runs the next command.
				using (var logits = Tensor.Create(DataType.Float32, Format.NHWC, 3, 5))
				using (var labels = Tensor.FromArray(new float[] { 1, 9, 2 }, 3))
				using (var loss = Tensor.Create(DataType.Float32, Format.NHWC, 3, 1))
				using (var sm = Tensor.Create(DataType.Float32, Format.NHWC, 3, 5))
				{
					Cmd.SoftmaxCrossEntropy().Exec(Hint.None, new[] { logits, labels }, new[] { loss, sm }, s);
					var held = Assert.Throws<NncException>(() => s.Wait());
					StringAssert.Contains("outside", held.NativeMessage);
					Cmd.EwSum().Exec(Hint.None, new[] { ta, tb }, new[] { tc }, s);
					s.Wait();
				}
				s.Dispose();
				s.Dispose();
				Assert.Throws<ObjectDisposedException>(() => Cmd.EwSum().Exec(Hint.None, new[] { ta, tb }, new[] { tc }, s));
			}
		}

		// Hint.Auto derives the padding a same-size 3x3 convolution needs.
		[Test]
		public void AutoHint()
		{
			var r = new Random(6);
			using (var x = Tensor.FromArray(Util.Rand(r, 2 * 7 * 6 * 3), 2, 7, 6, 3))
			using (var w = Tensor.FromArray(Util.Rand(r, 4 * 27), 4, 3, 3, 3))
			using (var b = Tensor.FromArray(Util.Rand(r, 4), 4))
			using (var ya = Tensor.Create(DataType.Float32, Format.NHWC, 2, 7, 6, 4))
			using (var yb = Tensor.Create(DataType.Float32, Format.NHWC, 2, 7, 6, 4))
			{
				var conv = Cmd.Convolution(1, 4, 3, 3, 3);
				conv.Exec(Hint.Auto(conv, x, ya), new[] { x, w, b }, new[] { ya });
				conv.Exec(Hint.Make(new[] { 1, 1 }, new[] { 1, 1 }, new[] { 1, 1 }), new[] { x, w, b }, new[] { yb });
				Util.Same("auto hint", ya.ToFloatArray(), yb.ToFloatArray());
			}
		}
	}
}
