using System;
using System.Linq;
using System.Threading.Tasks;
using NUnit.Framework;

namespace Nnc.Tests
{
	[TestFixture]
	public class TensorTests
	{
		[Test]
		public void RoundTrip()
		{
			var data = new float[] { 1, 2, 3, 4, 5, 6 };
			using (var x = Tensor.FromArray(data, 2, 3))
			{
				CollectionAssert.AreEqual(new[] { 2, 3 }, x.Shape);
				Assert.AreEqual(DataType.Float32, x.DataType);
				Assert.AreEqual(Format.NHWC, x.Format);
				Assert.AreEqual(6, x.Count);
				Util.Same("round trip", x.ToFloatArray(), data);
				CollectionAssert.AreEqual(data.Select(v => (double)v).ToArray(), x.ToDoubleArray());
				Assert.Throws<NncException>(() => x.CopyFrom(new float[5]));
			}
			using (var y = Tensor.FromArray(new double[] { 0.5, -1.25 }, 2))
				CollectionAssert.AreEqual(new[] { 0.5, -1.25 }, y.ToDoubleArray());
		}

		// Wrap makes a tensor over the array itself: writes go both ways.
		[Test]
		public void WrapAliases()
		{
			var xs = new float[] { -1, 2, -3, 4 };
			var ys = new float[4];
			using (var x = Tensor.Wrap(xs, 4))
			using (var y = Tensor.Wrap(ys, 4))
			{
				Cmd.ReLU().Exec(new[] { x }, new[] { y });
				CollectionAssert.AreEqual(new float[] { 0, 2, 0, 4 }, ys);
				ys[1] = 10;
				Cmd.ScalarMul(2).Exec(new[] { y }, new[] { x });
				CollectionAssert.AreEqual(new float[] { 0, 20, 0, 8 }, xs);
			}
			Assert.Throws<NncException>(() => Tensor.Wrap(new float[3], 4));
		}

		[Test]
		public void DisposeIdempotentAndSafeAfterUse()
		{
			var x = Tensor.FromArray(new float[] { 1, 2 }, 2);
			using (var y = Tensor.Create(DataType.Float32, Format.NHWC, 2))
			{
				Cmd.EwExp().Exec(new[] { x }, new[] { y });
				x.Dispose();
				x.Dispose();
				Assert.IsTrue(x.IsDisposed);
				Assert.AreEqual("Tensor(disposed)", x.ToString());
				Assert.Throws<ObjectDisposedException>(() => Cmd.EwExp().Exec(new[] { x }, new[] { y }));
				Assert.Throws<ObjectDisposedException>(() => x.ToFloatArray());
				Assert.Throws<ObjectDisposedException>(() => x.CopyFrom(new float[2]));
				Assert.Throws<ObjectDisposedException>(() => x.View(new[] { 0 }, new[] { 1 }));
				Assert.Throws<ObjectDisposedException>(() => { var s = x.Shape; });
				Assert.Throws<ObjectDisposedException>(() => x.Zero());
				// y still works.
				Util.Close("exp", y.ToFloatArray(), new[] { Math.E, Math.E * Math.E }, 1e-6);
			}
		}

		// 10,000 tensors and views created and disposed leave the C live-object
		// count where it was; so do tensors only dropped, once finalizers ran.
		[Test]
		public void NoLeak()
		{
			GC.Collect();
			GC.WaitForPendingFinalizers();
			long before = Library.LiveObjects(LiveKind.Tensor);
			for (int i = 0; i < 10000; i++)
			{
				var x = Tensor.Create(DataType.Float32, Format.NHWC, 3, 4);
				var v = x.View(new[] { 1, 1 }, new[] { 2, 2 });
				Assert.AreEqual(before + 2, Library.LiveObjects(LiveKind.Tensor));
				x.Dispose();
				v.Dispose();
			}
			Assert.AreEqual(before, Library.LiveObjects(LiveKind.Tensor));
			var pinned = new float[8];
			for (int i = 0; i < 1000; i++)
			{
				Tensor.Create(DataType.Float32, Format.NHWC, 8);
				Tensor.Wrap(pinned, 8);
			}
			for (int i = 0; i < 10 && Library.LiveObjects(LiveKind.Tensor) != before; i++)
			{
				GC.Collect();
				GC.WaitForPendingFinalizers();
			}
			Assert.AreEqual(before, Library.LiveObjects(LiveKind.Tensor), "finalizers");
			long all = Library.LiveObjects(LiveKind.All);
			for (int i = 0; i < 10000; i++)
				new Stream().Dispose();
			for (int i = 0; i < 200; i++)
			{
				using (var g = new Graph())
				{
					var a = g.Variable(new float[] { 1, 2 }, 2);
					var b = g.NewVariable();
					g.Exec(Cmd.EwExp(), new[] { a }, new[] { b });
					a.Dispose();
					if (i % 2 == 0) b.Dispose();
				}
				using (var m = Model.Sequential(Model.Dense(3), Model.ReLU()))
					m.Compile(new[] { TensorParams.Float32(2, 4) }, Cmd.Sgd(false, 0.1f, 1, 0, 0, 0), Cmd.Mse());
			}
			Assert.AreEqual(all, Library.LiveObjects(LiveKind.All), "streams, graphs, models");
		}

		// Tasks each with their own tensors, concurrently; each failure carries its own thread's message.
		[Test]
		public void ConcurrentTasks()
		{
			var tasks = Enumerable.Range(0, 8).Select(w => Task.Run(() =>
			{
				var r = new Random(w);
				var a = Util.Rand(r, 12);
				var b = Util.Rand(r, 20);
				using (var ta = Tensor.FromArray(a, 3, 4))
				using (var tb = Tensor.FromArray(b, 5, 4))
				using (var tc = Tensor.Create(DataType.Float32, Format.NHWC, 3, 5))
				{
					for (int round = 0; round < 200; round++)
					{
						Cmd.Gemm(null, new[] { 0, 1 }).Exec(new[] { ta, tb }, new[] { tc });
						var c = tc.ToFloatArray();
						for (int m = 0; m < 3; m++)
							for (int n = 0; n < 5; n++)
							{
								double s = 0;
								for (int k = 0; k < 4; k++) s += (double)a[m * 4 + k] * b[n * 4 + k];
								if (Math.Abs(c[m * 5 + n] - s) > 1e-5) throw new Exception("wrong product");
							}
						try { Cmd.Gemm().Exec(new[] { ta, tb }, new[] { tc }); throw new Exception("bad GEMM accepted"); }
						catch (NncException e) { if (string.IsNullOrEmpty(e.NativeMessage)) throw; }
					}
				}
			})).ToArray();
			Task.WaitAll(tasks);
		}
	}
}
