using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Nnc.Tests
{
	/// <summary>A packed NHWC float32 tensor's values and shape (null: an empty slot).</summary>
	public class T
	{
		public float[] Data;
		public int[] Shape;
		public T(float[] data, params int[] shape) { Data = data; Shape = shape; }
		public static T Zeros(params int[] shape)
		{
			int n = 1;
			foreach (var d in shape) n *= d;
			return new T(new float[n], shape);
		}
	}

	/// <summary>Commands run through the C API directly with libnnc's macros (bindings/cref/nnc_cref.h).</summary>
	public static class CRef
	{
		public const int Dense = 0, Gemm = 1, Conv = 2, MaxPool = 3, AvgPool = 4, ReLU = 5, Sigmoid = 6, Tanh = 7,
			Softmax = 8, SCE = 9, EWSum = 10, EWProd = 11, BatchNorm = 12, SGD = 13, MSE = 14, Add = 15, Adam = 16,
			LeakyReLU = 17, EWExp = 18, ScalarMul = 19, GELU = 20, LayerNorm = 21, Swish = 22, ReduceSum = 23;

		[DllImport("nnc_cref")]
		static extern unsafe int cref_exec(int kind, float* p, int ni, int no, IntPtr* data, int* dims, int stride, int pad, byte* msg, int msgSize);
		[DllImport("nnc_cref")]
		public static extern double cref_ewsum_ns(int n);

		/// <summary>Run kind on inputs into outputs' Data; the C message on failure, null on success.</summary>
		public static unsafe string Exec(int kind, float[] p, T[] inputs, T[] outputs, int stride = 0, int pad = 0)
		{
			var all = new T[inputs.Length + outputs.Length];
			inputs.CopyTo(all, 0);
			outputs.CopyTo(all, inputs.Length);
			var pins = new GCHandle[all.Length];
			IntPtr* data = stackalloc IntPtr[all.Length];
			int* dims = stackalloc int[all.Length * 12];
			for (int i = 0; i < all.Length * 12; i++) dims[i] = 0;
			float* ps = stackalloc float[8];
			for (int i = 0; i < 8; i++) ps[i] = p != null && i < p.Length ? p[i] : 0;
			byte* msg = stackalloc byte[1024];
			try
			{
				for (int i = 0; i < all.Length; i++)
				{
					data[i] = IntPtr.Zero;
					if (all[i] == null) continue;
					pins[i] = GCHandle.Alloc(all[i].Data, GCHandleType.Pinned);
					data[i] = pins[i].AddrOfPinnedObject();
					for (int j = 0; j < all[i].Shape.Length; j++) dims[i * 12 + j] = all[i].Shape[j];
				}
				int r = cref_exec(kind, ps, inputs.Length, outputs.Length, data, dims, stride, pad, msg, 1024);
				if (r == 0) return null;
				int len = 0;
				while (len < 1024 && msg[len] != 0) len++;
				return Encoding.UTF8.GetString(msg, len);
			}
			finally
			{
				foreach (var h in pins) if (h.IsAllocated) h.Free();
			}
		}
	}
}
