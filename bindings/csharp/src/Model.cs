using System;
using System.Runtime.InteropServices;

namespace Nnc
{
	/// <summary>Owns a C model; a layer taken over by a composite model gives up ownership.</summary>
	public sealed class ModelHandle : SafeHandle
	{
		internal IntPtr Name;
		internal ModelHandle() : base(IntPtr.Zero, true) { }
		public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
		internal void Set(IntPtr p) { SetHandle(p); }
		protected override bool ReleaseHandle()
		{
			Native.ccv_cnnp_model_free(handle);
			return true;
		}
	}

	/// <summary>The description of a tensor: type, layout, shape.</summary>
	public struct TensorParams
	{
		public DataType DataType;
		public Format Format;
		public int[] Shape;

		public static TensorParams Float32(params int[] shape)
		{
			return new TensorParams { DataType = DataType.Float32, Format = Format.NHWC, Shape = shape };
		}
	}

	/// <summary>
	/// A model of the model API (ccv_cnnp_*): a layer or a composition. Compile it
	/// for input shapes, a minimiser and a loss; then Fit and Evaluate.
	/// </summary>
	public sealed class Model : IDisposable
	{
		internal readonly ModelHandle Handle = new ModelHandle();
		bool owned; // taken over by a composite model

		Model(string op, Func<IntPtr> make)
		{
			Library.Init();
			Native.ccv_nnc_error_clear();
			var p = make();
			if (p == IntPtr.Zero)
				throw NncException.Last(op, -1);
			Handle.Set(p);
		}

		public static Model Dense(int count, bool noBias = false) { return new Model("Dense", () => Native.ccv_cnnp_dense(count, noBias ? 1 : 0, 0, 1, IntPtr.Zero)); }
		public static Model ReLU() { return new Model("ReLU", () => Native.ccv_cnnp_relu(IntPtr.Zero)); }
		public static Model Sigmoid() { return new Model("Sigmoid", () => Native.ccv_cnnp_sigmoid(IntPtr.Zero)); }
		public static Model Tanh() { return new Model("Tanh", () => Native.ccv_cnnp_tanh(IntPtr.Zero)); }
		public static Model Softmax() { return new Model("Softmax", () => Native.ccv_cnnp_softmax(IntPtr.Zero)); }
		public static Model Flatten() { return new Model("Flatten", () => Native.ccv_cnnp_flatten(IntPtr.Zero)); }
		/// <summary>Batch normalisation over all but the channel axis.</summary>
		public static Model BatchNorm(float momentum, float epsilon) { return new Model("BatchNorm", () => Native.ccv_cnnp_batch_norm(momentum, epsilon, 1, IntPtr.Zero)); }

		/// <summary>A convolution: filters outputs over kh×kw windows, the hint's stride and padding (Hint.None: stride 1, none), NHWC.</summary>
		public static unsafe Model Convolution(int groups, int filters, int kh, int kw, Hint hint, bool noBias = false)
		{
			var kdim = new int[Native.MaxDims];
			var dilation = new int[Native.MaxDims];
			kdim[0] = kh; kdim[1] = kw;
			var h = hint.Value;
			GC.KeepAlive(hint.Box);
			fixed (int* k = kdim, d = dilation)
			{
				IntPtr pk = (IntPtr)k, pd = (IntPtr)d;
				return new Model("Convolution", () => Native.ccv_cnnp_convolution(groups, filters, (int*)pk, (int*)pd, noBias ? 1 : 0, h, 0, 1, IntPtr.Zero));
			}
		}

		/// <summary>Max pooling over kh×kw windows with the hint's stride and padding.</summary>
		public static unsafe Model MaxPool(int kh, int kw, Hint hint)
		{
			var kdim = new int[Native.MaxDims];
			kdim[0] = kh; kdim[1] = kw;
			var h = hint.Value;
			GC.KeepAlive(hint.Box);
			fixed (int* k = kdim)
			{
				IntPtr pk = (IntPtr)k;
				return new Model("MaxPool", () => Native.ccv_cnnp_max_pool((int*)pk, h, IntPtr.Zero));
			}
		}

		/// <summary>Average pooling over kh×kw windows with the hint's stride and padding.</summary>
		public static unsafe Model AveragePool(int kh, int kw, Hint hint)
		{
			var kdim = new int[Native.MaxDims];
			kdim[0] = kh; kdim[1] = kw;
			var h = hint.Value;
			GC.KeepAlive(hint.Box);
			fixed (int* k = kdim)
			{
				IntPtr pk = (IntPtr)k;
				return new Model("AveragePool", () => Native.ccv_cnnp_average_pool((int*)pk, h, IntPtr.Zero));
			}
		}

		/// <summary>The layers one after the other. Takes them over: they are freed with this model and refuse use on their own.</summary>
		public static unsafe Model Sequential(params Model[] layers)
		{
			if (layers == null || layers.Length == 0)
				throw new NncException(ErrorCode.Invalid, "Sequential", "no layers");
			var ptrs = new IntPtr[layers.Length];
			for (int i = 0; i < layers.Length; i++)
			{
				if (layers[i] == null || layers[i].owned || layers[i].Handle.IsClosed)
					throw new ObjectDisposedException("Model", "Sequential: a layer is disposed or already part of a model");
				ptrs[i] = layers[i].Handle.DangerousGetHandle();
			}
			Model m;
			fixed (IntPtr* p = ptrs)
			{
				var pp = (IntPtr)p;
				m = new Model("Sequential", () => Native.ccv_cnnp_sequential_new((IntPtr*)pp, ptrs.Length, 1, IntPtr.Zero));
			}
			foreach (var l in layers)
			{
				l.owned = true;
				l.Handle.SetHandleAsInvalid(); // its memory is the composite's now
			}
			return m;
		}

		/// <summary>Free the model (and the layers it took over). Idempotent.</summary>
		public void Dispose() { Handle.Dispose(); }

		IntPtr Ptr(string op)
		{
			if (owned)
				throw new ObjectDisposedException("Model", op + ": the layer belongs to a composite model");
			if (Handle.IsClosed)
				throw new ObjectDisposedException("Model", op + ": the model is disposed");
			return Handle.DangerousGetHandle();
		}

		/// <summary>Build for these input shapes with a minimiser and a loss (null: none).</summary>
		public unsafe void Compile(TensorParams[] inputs, Cmd minimizer, Cmd? loss)
		{
			const string op = "Model.Compile";
			var m = Ptr(op);
			if (inputs == null || inputs.Length == 0)
				throw new NncException(ErrorCode.Invalid, op, "no input shapes");
			var ps = new TensorParamNative[inputs.Length];
			for (int i = 0; i < inputs.Length; i++)
				ps[i] = Tensor.Params(inputs[i].DataType, inputs[i].Format, inputs[i].Shape);
			var l = loss.HasValue ? loss.Value : default(Cmd); // NOOP: no loss
			Native.ccv_nnc_error_clear();
			fixed (TensorParamNative* p = ps)
			{
				int r = Native.ccv_cnnp_model_compile_p(m, p, ps.Length, minimizer.Ptr, l.Ptr);
				GC.KeepAlive(minimizer.Box);
				GC.KeepAlive(l.Box);
				if (r != 0)
					throw NncException.Last(op, r);
			}
			GC.KeepAlive(this);
		}

		unsafe void Run(string op, Tensor[] a, Tensor[] b, Tensor[] c, bool fit)
		{
			var m = Ptr(op);
			var all = new Tensor[(a == null ? 0 : a.Length) + (b == null ? 0 : b.Length) + (c == null ? 0 : c.Length)];
			int k = 0;
			foreach (var arr in new[] { a, b, c })
				if (arr != null)
					foreach (var t in arr) all[k++] = t;
			IntPtr* ptrs = stackalloc IntPtr[all.Length + 1];
			int added = 0;
			try
			{
				for (int i = 0; i < all.Length; i++)
				{
					if (all[i] == null) { ptrs[i] = IntPtr.Zero; continue; }
					bool ok = false;
					all[i].Handle.DangerousAddRef(ref ok);
					added = i + 1;
					ptrs[i] = all[i].Handle.DangerousGetHandle();
				}
				int na = a == null ? 0 : a.Length, nb = b == null ? 0 : b.Length, nc = c == null ? 0 : c.Length;
				Native.ccv_nnc_error_clear();
				if (fit)
					Native.ccv_cnnp_model_fit(m, ptrs, na, ptrs + na, nb, ptrs + na + nb, nc, IntPtr.Zero, IntPtr.Zero);
				else
					Native.ccv_cnnp_model_evaluate(m, new EvaluateParamNative { IsTest = 1 }, ptrs, na, ptrs + na, nb, IntPtr.Zero, IntPtr.Zero);
				NncException.CheckVoid(op);
			}
			finally
			{
				for (int i = 0; i < added; i++)
					if (all[i] != null)
						all[i].Handle.DangerousRelease();
			}
			GC.KeepAlive(this);
		}

		/// <summary>One training step: forward, loss against fits, backward, minimiser; outputs get the model's outputs.</summary>
		public void Fit(Tensor[] inputs, Tensor[] fits, Tensor[] outputs) { Run("Model.Fit", inputs, fits, outputs, true); }

		/// <summary>Inference (is_test) on inputs into outputs.</summary>
		public void Evaluate(Tensor[] inputs, Tensor[] outputs) { Run("Model.Evaluate", inputs, outputs, null, false); }

		/// <summary>Replace the minimiser of every parameter (reset: forget its state).</summary>
		public void SetMinimizer(Cmd minimizer, bool reset)
		{
			var m = Ptr("Model.SetMinimizer");
			Native.ccv_nnc_error_clear();
			Native.ccv_cnnp_model_set_minimizer(m, minimizer.Native, reset ? 1 : 0, IntPtr.Zero, 0);
			NncException.CheckVoid("Model.SetMinimizer");
			GC.KeepAlive(this);
		}

		/// <summary>Save the parameters and minimiser state to a SQLite file.</summary>
		public void Write(string path)
		{
			var m = Ptr("Model.Write");
			Native.ccv_nnc_error_clear();
			Native.ccv_cnnp_model_write_to_file(m, path, IntPtr.Zero);
			NncException.CheckVoid("Model.Write");
			GC.KeepAlive(this);
		}

		/// <summary>Load what Write saved into this compiled model (all or nothing).</summary>
		public void Read(string path)
		{
			var m = Ptr("Model.Read");
			Native.ccv_nnc_error_clear();
			Native.ccv_cnnp_model_read_from_file(path, IntPtr.Zero, m);
			NncException.CheckVoid("Model.Read");
			GC.KeepAlive(this);
		}
	}
}
