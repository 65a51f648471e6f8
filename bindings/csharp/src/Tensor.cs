using System;
using System.Runtime.InteropServices;

namespace Nnc
{
	/// <summary>Element types (CCV_32F, …).</summary>
	public enum DataType
	{
		UInt8 = 0x01000,
		Int32 = 0x02000,
		Float32 = 0x04000,
		Int64 = 0x08000,
		Float64 = 0x10000,
		Float16 = 0x20000,
		BFloat16 = 0x80000,
	}

	/// <summary>Memory layouts (CCV_TENSOR_FORMAT_*).</summary>
	public enum Format
	{
		NCHW = 0x01,
		NHWC = 0x02,
		CHWN = 0x04,
	}

	/// <summary>
	/// Owns a C tensor or view. A view holds a reference on the handle of the
	/// tensor it looks into, so that tensor's memory stays until every view of it
	/// is released; a tensor over a managed array keeps the array pinned until
	/// it is released.
	/// </summary>
	public sealed class TensorHandle : SafeHandle
	{
		internal bool IsView;
		internal TensorHandle Base;
		internal GCHandle Pin;

		internal TensorHandle() : base(IntPtr.Zero, true) { }

		public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

		internal void Set(IntPtr p) { SetHandle(p); }

		protected override bool ReleaseHandle()
		{
			if (IsView)
				Native.ccv_nnc_tensor_view_free(handle);
			else
				Native.ccv_nnc_tensor_free(handle);
			if (Pin.IsAllocated)
				Pin.Free();
			if (Base != null)
				Base.DangerousRelease();
			return true;
		}
	}

	/// <summary>
	/// An NNC tensor (CPU memory) or a view into one. Dispose it when done;
	/// Dispose is idempotent, and a disposed tensor throws ObjectDisposedException.
	/// </summary>
	/// <remarks>
	/// Aliasing: <see cref="Wrap(float[], int[])"/> makes a tensor over the
	/// array itself, pinned until the tensor (and its views) are released:
	/// commands writing the tensor change the array and writes to the array are
	/// the tensor's contents. <see cref="FromArray(float[], int[])"/>,
	/// <see cref="ToFloatArray"/> and <see cref="CopyFrom(float[])"/> copy.
	/// </remarks>
	public sealed class Tensor : IDisposable
	{
		internal readonly TensorHandle Handle;

		Tensor(TensorHandle h) { Handle = h; }

		internal static unsafe TensorParamNative Params(DataType dt, Format f, int[] shape)
		{
			if (shape == null || shape.Length == 0 || shape.Length > Native.MaxDims)
				throw new NncException(ErrorCode.Invalid, "Tensor", "a tensor has 1 to " + Native.MaxDims + " dimensions, not " + (shape == null ? 0 : shape.Length));
			var p = new TensorParamNative { Type = Native.TensorCpuMemory, Format = (int)f, DataType = (int)dt };
			for (int i = 0; i < shape.Length; i++)
			{
				if (shape[i] <= 0)
					throw new NncException(ErrorCode.Invalid, "Tensor", "dimension " + i + " is " + shape[i] + "; dimensions are positive");
				p.Dim[i] = shape[i];
			}
			return p;
		}

		static Tensor Make(IntPtr data, TensorParamNative p, GCHandle pin)
		{
			Library.Init();
			var h = new TensorHandle();
			IntPtr t;
			// No managed code between the call and SetHandle can fail, so the
			// tensor cannot leak.
			t = Native.ccv_nnc_tensor_new(data, p, 0);
			if (t == IntPtr.Zero)
			{
				var e = NncException.Last("Tensor", -1);
				if (pin.IsAllocated)
					pin.Free();
				throw e;
			}
			h.Pin = pin;
			h.Set(t);
			return new Tensor(h);
		}

		/// <summary>A new tensor (uninitialised) of this type, layout and shape, outermost first.</summary>
		public static Tensor Create(DataType dataType, Format format, params int[] shape)
		{
			return Make(IntPtr.Zero, Params(dataType, format, shape), default(GCHandle));
		}

		/// <summary>A new NHWC float32 tensor holding a copy of data.</summary>
		public static Tensor FromArray(float[] data, params int[] shape)
		{
			var t = Create(DataType.Float32, Format.NHWC, shape);
			try { t.CopyFrom(data); } catch { t.Dispose(); throw; }
			return t;
		}

		/// <summary>A new NHWC float64 tensor holding a copy of data.</summary>
		public static Tensor FromArray(double[] data, params int[] shape)
		{
			var t = Create(DataType.Float64, Format.NHWC, shape);
			try { t.CopyFrom(data); } catch { t.Dispose(); throw; }
			return t;
		}

		/// <summary>A new NHWC int32 tensor holding a copy of data (labels, indices).</summary>
		public static Tensor FromArray(int[] data, params int[] shape)
		{
			var t = Create(DataType.Int32, Format.NHWC, shape);
			try { t.Copy(data, DataType.Int32, true); } catch { t.Dispose(); throw; }
			return t;
		}

		static Tensor WrapArray(Array data, DataType dt, int[] shape)
		{
			var p = Params(dt, Format.NHWC, shape);
			long n = 1;
			foreach (var d in shape) n *= d;
			if (data == null || data.LongLength != n)
				throw new NncException(ErrorCode.Invalid, "Tensor.Wrap", (data == null ? 0 : data.LongLength) + " values for a tensor of " + n + " elements");
			var pin = GCHandle.Alloc(data, GCHandleType.Pinned);
			return Make(pin.AddrOfPinnedObject(), p, pin);
		}

		/// <summary>
		/// An NHWC float32 tensor over the array itself, no copy (see the aliasing
		/// rule above); the array stays pinned until the tensor is released.
		/// </summary>
		public static Tensor Wrap(float[] data, params int[] shape) { return WrapArray(data, DataType.Float32, shape); }

		/// <summary>An NHWC float64 tensor over the array itself, no copy.</summary>
		public static Tensor Wrap(double[] data, params int[] shape) { return WrapArray(data, DataType.Float64, shape); }

		/// <summary>Release the tensor (a view: the view; the memory goes with its last view). Idempotent.</summary>
		public void Dispose() { Handle.Dispose(); }

		/// <summary>Whether Dispose has been called.</summary>
		public bool IsDisposed { get { return Handle.IsClosed; } }

		/// <summary>Run f on the C tensor with a reference held, so that it cannot be released meanwhile.</summary>
		internal T Use<T>(Func<IntPtr, T> f)
		{
			bool added = false;
			try
			{
				Handle.DangerousAddRef(ref added);
				return f(Handle.DangerousGetHandle());
			}
			finally
			{
				if (added)
					Handle.DangerousRelease();
			}
		}

		internal TensorParamNative Info
		{
			get
			{
				return Use(p =>
				{
					TensorParamNative info;
					NncException.Check("Tensor", Native.ccv_nnc_tensor_get_params(p, out info));
					return info;
				});
			}
		}

		/// <summary>The dimensions, outermost first.</summary>
		public unsafe int[] Shape
		{
			get
			{
				var info = Info;
				int n = 0;
				while (n < Native.MaxDims && info.Dim[n] != 0) n++;
				var s = new int[n];
				for (int i = 0; i < n; i++) s[i] = info.Dim[i];
				return s;
			}
		}

		public DataType DataType { get { return (DataType)Info.DataType; } }
		public Format Format { get { return (Format)Info.Format; } }
		public bool IsView { get { return Handle.IsView; } }

		/// <summary>Number of elements.</summary>
		public long Count
		{
			get
			{
				long n = 1;
				foreach (var d in Shape) n *= d;
				return n;
			}
		}

		/// <summary>The first element's address (C memory, or the wrapped array). Valid while the tensor is not released.</summary>
		public IntPtr DataPointer { get { return Use(p => Native.ccv_nnc_tensor_data_ptr(p)); } }

		unsafe void Copy(Array values, DataType dt, bool into)
		{
			long n = Count;
			if (values == null || values.LongLength != n)
				throw new NncException(ErrorCode.Invalid, into ? "Tensor.CopyFrom" : "Tensor.ToArray", (values == null ? 0 : values.LongLength) + " values for a tensor of " + n + " elements");
			var pin = GCHandle.Alloc(values, GCHandleType.Pinned);
			try
			{
				Use(p =>
				{
					void* mem = (void*)pin.AddrOfPinnedObject();
					int r = into ? Native.ccv_nnc_tensor_copy_from(p, mem, (int)dt, (UIntPtr)(ulong)n)
						: Native.ccv_nnc_tensor_copy_to(p, mem, (int)dt, (UIntPtr)(ulong)n);
					NncException.Check(into ? "Tensor.CopyFrom" : "Tensor.ToArray", r);
					return 0;
				});
			}
			finally { pin.Free(); }
		}

		/// <summary>Copy values (row-major) into the tensor, converting to its type; views too.</summary>
		public void CopyFrom(float[] values) { Copy(values, DataType.Float32, true); }
		public void CopyFrom(double[] values) { Copy(values, DataType.Float64, true); }

		/// <summary>A copy of the elements in row-major order, as float32.</summary>
		public float[] ToFloatArray() { var a = new float[Count]; Copy(a, DataType.Float32, false); return a; }
		/// <summary>A copy of the elements in row-major order, as float64.</summary>
		public double[] ToDoubleArray() { var a = new double[Count]; Copy(a, DataType.Float64, false); return a; }

		/// <summary>
		/// A window into this tensor: shape is the view's, offset where it starts
		/// (elements per dimension), stride the elements between neighbours along
		/// each dimension (null: this tensor's own). The view keeps this tensor's
		/// memory alive.
		/// </summary>
		public unsafe Tensor View(int[] offset, int[] shape, int[] stride = null)
		{
			var info = Info;
			var p = Params((DataType)info.DataType, (Format)info.Format, shape);
			if (offset == null || offset.Length != shape.Length || (stride != null && stride.Length != shape.Length))
				throw new NncException(ErrorCode.Invalid, "Tensor.View", "offset and stride need one entry per dimension of the view");
			if (stride == null && Shape.Length != shape.Length)
				throw new NncException(ErrorCode.Invalid, "Tensor.View", "give the strides of a view with a different number of dimensions");
			var ofs = new int[Native.MaxDims];
			var str = new int[Native.MaxDims];
			for (int i = 0; i < offset.Length; i++) ofs[i] = offset[i];
			var h = new TensorHandle { IsView = true };
			bool added = false;
			Handle.DangerousAddRef(ref added);
			IntPtr v;
			fixed (int* po = ofs, ps = str)
			{
				if (stride == null)
				{
					if (Native.ccv_nnc_tensor_get_strides(Handle.DangerousGetHandle(), ps) != 0)
					{
						var e = NncException.Last("Tensor.View", -1);
						Handle.DangerousRelease();
						throw e;
					}
				}
				else
					for (int i = 0; i < stride.Length; i++) ps[i] = stride[i];
				v = Native.ccv_nnc_tensor_view_new(Handle.DangerousGetHandle(), p, po, ps);
			}
			if (v == IntPtr.Zero)
			{
				var e = NncException.Last("Tensor.View", -1);
				Handle.DangerousRelease();
				throw e;
			}
			h.Base = Handle; // released by the view's ReleaseHandle
			h.Set(v);
			return new Tensor(h);
		}

		/// <summary>Set every element to zero.</summary>
		public void Zero() { Use(p => { Native.ccv_nnc_tensor_zero(p); return 0; }); }

		public override string ToString()
		{
			if (IsDisposed) return "Tensor(disposed)";
			return "Tensor(" + DataType + " " + Format + " [" + string.Join(", ", Shape) + "]" + (IsView ? " view" : "") + ")";
		}
	}
}
