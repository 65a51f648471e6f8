using System;
using System.IO;
using System.Linq;
using NUnit.Framework;

namespace Nnc.Tests
{
	[TestFixture]
	public class TrainTests
	{
		static readonly double[][] Centres = { new double[] { 2, 0, -1, 1 }, new double[] { -2, 1, 1, -1 }, new double[] { 0, -2, 2, 0 } };

		static double Normal(Random r) { return Math.Sqrt(-2 * Math.Log(1 - r.NextDouble())) * Math.Cos(2 * Math.PI * r.NextDouble()); }

		static void Blobs(Random r, float[] x, float[] labels)
		{
			for (int i = 0; i < labels.Length; i++)
			{
				int c = r.Next(3);
				for (int k = 0; k < 4; k++) x[i * 4 + k] = (float)(Centres[c][k] + 0.6 * Normal(r));
				labels[i] = c;
			}
		}

		static double Accuracy(float[] z, float[] labels)
		{
			int right = 0;
			for (int i = 0; i < labels.Length; i++)
			{
				int best = 0;
				for (int c = 1; c < 3; c++) if (z[i * 3 + c] > z[i * 3 + best]) best = c;
				if (best == (int)labels[i]) right++;
			}
			return (double)right / labels.Length;
		}

		const int Batch = 32;

		static Model Mlp()
		{
			var m = Model.Sequential(Model.Dense(16), Model.ReLU(), Model.Dense(3));
			m.Compile(new[] { TensorParams.Float32(Batch, 4) }, Cmd.Sgd(false, 0.05f, 1f / Batch, 0, 0.9f, 0), Cmd.SoftmaxCrossEntropy());
			return m;
		}

		// A small MLP trained through the binding separates held-out points; written
		// and read back, a second model computes the same.
		[Test]
		public void TrainMlp()
		{
			var r = new Random(7);
			var xs = new float[Batch * 4];
			var ys = new float[Batch];
			var zs = new float[Batch * 3];
			using (var m = Mlp())
			using (var x = Tensor.Wrap(xs, Batch, 4))
			using (var y = Tensor.Wrap(ys, Batch))
			using (var z = Tensor.Wrap(zs, Batch, 3))
			{
				double first = 0, last = 0;
				for (int step = 0; step < 300; step++)
				{
					Blobs(r, xs, ys);
					m.Fit(new[] { x }, new[] { y }, new[] { z });
					double loss = 0;
					for (int i = 0; i < Batch; i++)
					{
						double mx = Math.Max(zs[i * 3], Math.Max(zs[i * 3 + 1], zs[i * 3 + 2]));
						double s = 0;
						for (int c = 0; c < 3; c++) s += Math.Exp(zs[i * 3 + c] - mx);
						loss += Math.Log(s) + mx - zs[i * 3 + (int)ys[i]];
					}
					if (step == 0) first = loss / Batch;
					last = loss / Batch;
				}
				Assert.Less(last, 0.3 * first, "loss");
				double acc = 0;
				for (int b = 0; b < 10; b++)
				{
					Blobs(r, xs, ys);
					m.Evaluate(new[] { x }, new[] { z });
					acc += Accuracy(zs, ys);
				}
				Assert.GreaterOrEqual(acc / 10, 0.95, "held-out accuracy");

				// With a zero learning rate fit changes nothing; a real rate then moves the outputs.
				m.SetMinimizer(Cmd.Sgd(false, 0, 1f / Batch, 0, 0, 0), true);
				m.Fit(new[] { x }, new[] { y }, new[] { z });
				var o0 = (float[])zs.Clone();
				m.Fit(new[] { x }, new[] { y }, new[] { z });
				Util.Same("fit at rate 0", zs, o0);
				m.SetMinimizer(Cmd.Sgd(false, 0.5f, 1f / Batch, 0, 0, 0), true);
				m.Fit(new[] { x }, new[] { y }, new[] { z });
				m.Fit(new[] { x }, new[] { y }, new[] { z });
				Assert.IsFalse(zs.SequenceEqual(o0), "fit at rate 0.5 left the outputs unchanged");

				var path = Path.Combine(Path.GetTempPath(), "nnc-cs-mlp-" + Guid.NewGuid() + ".sqlite3");
				try
				{
					m.Write(path);
					m.Evaluate(new[] { x }, new[] { z });
					var want = (float[])zs.Clone();
					using (var m2 = Mlp())
					using (var z2 = Tensor.Create(DataType.Float32, Format.NHWC, Batch, 3))
					{
						m2.Read(path);
						m2.Evaluate(new[] { x }, new[] { z2 });
						Util.Same("model read back", z2.ToFloatArray(), want);
						var e = Assert.Throws<NncException>(() => m2.Read(path + ".missing"));
						Assert.IsNotEmpty(e.NativeMessage);
					}
				}
				finally { File.Delete(path); }
				using (var bad = Tensor.Create(DataType.Float32, Format.NHWC, Batch, 5))
				{
					var e = Assert.Throws<NncException>(() => m.Fit(new[] { bad }, new[] { y }, new[] { z }));
					Assert.IsNotEmpty(e.NativeMessage);
				}
				var d = Model.Dense(2);
				using (var s = Model.Sequential(d))
				{
					Assert.Throws<ObjectDisposedException>(() => d.Compile(new[] { TensorParams.Float32(1, 2) }, Cmd.Sgd(false, 0.1f, 1, 0, 0, 0), null));
					d.Dispose();
				}
				m.Dispose();
				m.Dispose();
				Assert.Throws<ObjectDisposedException>(() => m.Evaluate(new[] { x }, new[] { z }));
			}
		}

		// The dynamic graph: a gradient against its closed form, then least squares by Minimize.
		[Test]
		public void DynamicGraph()
		{
			var r = new Random(8);
			const int n = 16, k = 4;
			var truth = new[] { 0.5, -1, 0.25, 2 };
			var xs = Util.Rand(r, n * k);
			var ts = new float[n];
			for (int i = 0; i < n; i++)
			{
				double s = 0;
				for (int j = 0; j < k; j++) s += truth[j] * xs[i * k + j];
				ts[i] = (float)s;
			}
			var g = new Graph();
			var x = g.Constant(xs, n, k);
			var target = g.Constant(ts, n, 1);
			var w = g.Variable(new[] { 0.1f, 0.2f, -0.3f, 0.4f }, 1, k);
			Func<Variable[]> loss = () =>
			{
				Variable y = g.NewVariable(), e = g.NewVariable(), sq = g.NewVariable(), l = g.NewVariable();
				g.Exec(Cmd.Gemm(null, new[] { 0, 1 }), new[] { x, w }, new[] { y });
				g.Exec(Cmd.Add(1, -1), new[] { y, target }, new[] { e });
				g.Exec(Cmd.EwProd(), new[] { e, e }, new[] { sq });
				g.Exec(Cmd.ReduceSum(0), new[] { sq }, new[] { l });
				return new[] { l, y, e, sq };
			};
			var vs = loss();
			var grads = g.Backward(new[] { vs[0] }, new[] { w });
			var ev = vs[2].ToFloatArray();
			var want = new double[k];
			for (int i = 0; i < n; i++)
				for (int j = 0; j < k; j++) want[j] += 2.0 * ev[i] * xs[i * k + j];
			Util.Close("dloss/dw", grads[0].ToFloatArray(), want, 1e-4);
			foreach (var v in vs.Concat(grads)) v.Dispose();
			using (var opt = new Optimizer(g, Cmd.Sgd(false, 0.02f, 1, 0, 0.5f, 0), w))
				for (int step = 0; step < 400; step++)
				{
					vs = loss();
					g.Minimize(opt, vs[0]);
					foreach (var v in vs) v.Dispose();
				}
			Util.Close("fitted weights", w.ToFloatArray(), truth, 1e-3);
			var bad = g.Variable(new float[] { 1, 2, 3 }, 3);
			var e2 = Assert.Throws<NncException>(() => g.Exec(Cmd.Gemm(), new[] { x, bad }, new[] { g.NewVariable() }));
			Assert.IsNotEmpty(e2.NativeMessage);
			g.Dispose();
			Assert.Throws<ObjectDisposedException>(() => w.ToFloatArray());
			w.Dispose();
			g.Dispose();
		}

		// The C test's small convolutional network (test/c/libnnc_style_d_cnnp.c)
		// through the binding: two blobs as 4x4 images must come apart.
		[Test]
		public void TrainConvNet()
		{
			const int n = 32;
			var r = new Random(9);
			var xs = new float[n * 16];
			var ls = new float[n];
			var zs = new float[n * 2];
			Action draw = () =>
			{
				for (int i = 0; i < n; i++)
				{
					int c = r.Next(2);
					float px = (float)(-1.5 + 3 * c + 0.5 * Normal(r)), py = (float)(1 - 2 * c + 0.5 * Normal(r));
					for (int k = 0; k < 16; k++) xs[i * 16 + k] = (k & 1) == 1 ? px : py;
					ls[i] = c;
				}
			};
			using (var m = Model.Sequential(
				Model.Convolution(1, 4, 3, 3, Hint.Make(new[] { 1, 1 }, new[] { 1, 1 }, new[] { 1, 1 })),
				Model.ReLU(),
				Model.MaxPool(2, 2, Hint.Make(new[] { 2, 2 })),
				Model.Flatten(),
				Model.Dense(2)))
			using (var x = Tensor.Wrap(xs, n, 4, 4, 1))
			using (var l = Tensor.Wrap(ls, n))
			using (var z = Tensor.Wrap(zs, n, 2))
			{
				m.Compile(new[] { TensorParams.Float32(n, 4, 4, 1) }, Cmd.Sgd(false, 0.1f, 1f / n, 0, 0.9f, 0), Cmd.SoftmaxCrossEntropy());
				for (int step = 0; step < 60; step++)
				{
					draw();
					m.Fit(new[] { x }, new[] { l }, new[] { z });
				}
				draw();
				m.Evaluate(new[] { x }, new[] { z });
				int right = 0;
				for (int i = 0; i < n; i++) if ((zs[i * 2 + 1] > zs[i * 2]) == (ls[i] > 0.5f)) right++;
				Assert.GreaterOrEqual(right, n - 2, "held-out points right");
			}
		}
	}
}
