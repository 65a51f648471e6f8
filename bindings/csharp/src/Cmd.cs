using System;
using System.Runtime.InteropServices;

namespace Nnc
{
	/// <summary>Stride and padding of a windowed command; Hint.None lets the command derive them.</summary>
	public unsafe struct Hint
	{
		// The C hint lives in unmanaged memory owned by the box (freed by its
		// finalizer), so a Hint is a reference-sized value and Exec passes a pointer.
		internal NativeBox<HintNative> Box;

		internal HintNative* Ptr { get { return Box == null ? null : (HintNative*)Box.P; } }
		internal HintNative Value { get { return Box == null ? default(HintNative) : *(HintNative*)Box.P; } }

		/// <summary>No hint.</summary>
		public static readonly Hint None = default(Hint);

		/// <summary>A hint from per-spatial-dimension strides and paddings (either padding may be null).</summary>
		public static unsafe Hint Make(int[] stride, int[] borderBegin = null, int[] borderEnd = null)
		{
			Library.Init();
			int rank = stride == null ? 0 : stride.Length;
			if ((borderBegin != null && borderBegin.Length != rank) || (borderEnd != null && borderEnd.Length != rank))
				throw new NncException(ErrorCode.Invalid, "Hint.Make", "stride, borderBegin and borderEnd need the same length");
			int* s = stackalloc int[Math.Max(rank, 1)];
			int* b = stackalloc int[Math.Max(rank, 1)];
			int* e = stackalloc int[Math.Max(rank, 1)];
			for (int i = 0; i < rank; i++)
			{
				s[i] = stride[i];
				b[i] = borderBegin == null ? 0 : borderBegin[i];
				e[i] = borderEnd == null ? 0 : borderEnd[i];
			}
			Nnc.Native.ccv_nnc_error_clear();
			var h = new Hint { Box = new NativeBox<HintNative>(Nnc.Native.ccv_nnc_hint_make(rank, s, b, e)) };
			NncException.CheckVoid("Hint.Make");
			return h;
		}

		/// <summary>The stride and symmetric padding that take input's shape to output's under cmd's window.</summary>
		public static unsafe Hint Auto(Cmd cmd, Tensor input, Tensor output)
		{
			var a = input.Info;
			var b = output.Info;
			Nnc.Native.ccv_nnc_error_clear();
			var h = new Hint { Box = new NativeBox<HintNative>(Nnc.Native.ccv_nnc_hint_auto_p(cmd.Ptr, ref a, ref b)) };
			GC.KeepAlive(cmd.Box);
			NncException.CheckVoid("Hint.Auto");
			return h;
		}
	}

	/// <summary>A struct in unmanaged memory, freed when the box is collected.</summary>
	internal sealed unsafe class NativeBox<T> where T : struct
	{
		internal readonly IntPtr P;
		internal NativeBox(T value)
		{
			P = Marshal.AllocHGlobal(Marshal.SizeOf(typeof(T)));
			Marshal.StructureToPtr(value, P, false);
		}
		~NativeBox() { Marshal.FreeHGlobal(P); }
	}

	/// <summary>Backends for Cmd.WithBackend.</summary>
	public static class Backend
	{
		public const uint Auto = 0;
		public const uint CpuRef = 0x3d9883e5;
		public const uint CpuOpt = 0x46deb194;
	}

	/// <summary>Reductions of the MSE loss.</summary>
	public enum MseReduce { Mean = 0, Sum = 1 }

	/// <summary>
	/// A command: an operation with its parameters, made by one of the static
	/// builders (Gemm, Convolution, ReLU, …) and run with Exec. A value type.
	/// </summary>
	public unsafe struct Cmd
	{
		// The C command lives in unmanaged memory owned by the box (freed by its
		// finalizer): a Cmd is a reference-sized value, and Exec passes a pointer
		// with nothing to pin or copy.
		internal NativeBox<CmdNative> Box;
		static readonly NativeBox<CmdNative> Noop = new NativeBox<CmdNative>(default(CmdNative));

		internal Cmd(CmdNative c) { Box = new NativeBox<CmdNative>(c); }
		internal CmdNative* Ptr { get { return (CmdNative*)(Box ?? Noop).P; } }
		internal CmdNative Native { get { return *(CmdNative*)(Box ?? Noop).P; } }

		static unsafe Cmd Make(string op, Func<CmdNative> f)
		{
			Library.Init();
			Nnc.Native.ccv_nnc_error_clear();
			var n = f();
			if (n.Cmd == 0)
				throw NncException.Last(op, -1);
			return new Cmd(n);
		}

		/// <summary>The command's identifier (CCV_NNC_…_FORWARD / _BACKWARD).</summary>
		public uint Id { get { return Native.Cmd; } }

		/// <summary>"CCV_NNC_GEMM_FORWARD" for GEMM.</summary>
		public string Name
		{
			get
			{
				var p = Nnc.Native.ccv_nnc_cmd_name(Native.Cmd);
				return p == IntPtr.Zero ? "command 0x" + Native.Cmd.ToString("x") : Marshal.PtrToStringAnsi(p);
			}
		}

		string Op { get { var n = Name; return n.StartsWith("CCV_NNC_") ? n.Substring(8) : n; } }

		/// <summary>The command pinned to a backend (Backend.CpuRef, …).</summary>
		public Cmd WithBackend(uint backend) { var n = Native; n.Backend = backend; return new Cmd(n); }

		/// <summary>
		/// The backward command with the same parameters: inputs are the gradients of
		/// the forward outputs, the forward inputs, the forward outputs; outputs the
		/// gradients of the forward inputs (null where not wanted).
		/// </summary>
		public unsafe Cmd Backward()
		{
			Library.Init();
			var self = Native;
			Nnc.Native.ccv_nnc_error_clear();
			var n = Nnc.Native.ccv_nnc_cmd_make(self.Cmd | 1, self.Info);
			if (n.Cmd == 0)
				throw NncException.Last("Backward", -1);
			return new Cmd(n);
		}

		static unsafe Cmd Transposes(string op, int[] a, int[] b)
		{
			int* ta = stackalloc int[2];
			int* tb = stackalloc int[2];
			ta[0] = a == null ? 0 : a[0]; ta[1] = a == null ? 0 : a[1];
			tb[0] = b == null ? 0 : b[0]; tb[1] = b == null ? 0 : b[1];
			Library.Init();
			Nnc.Native.ccv_nnc_error_clear();
			var n = Nnc.Native.ccv_nnc_cmd_gemm_forward(ta, tb);
			if (n.Cmd == 0)
				throw NncException.Last(op, -1);
			return new Cmd(n);
		}

		/// <summary>
		/// C = A·B (+ bias) on |a|b|bias (optional)|; each transpose names two axes to
		/// swap (null: none). A dense layer y = x·wᵀ + b is Gemm(null, new[] { 0, 1 }).
		/// </summary>
		public static Cmd Gemm(int[] transposeA = null, int[] transposeB = null)
		{
			if ((transposeA != null && transposeA.Length != 2) || (transposeB != null && transposeB.Length != 2))
				throw new NncException(ErrorCode.Invalid, "Gemm", "a transpose names two axes");
			return Transposes("Gemm", transposeA, transposeB);
		}

		static unsafe Cmd WithInts(string op, int[] v, Func<IntPtr, CmdNative> f)
		{
			v = v ?? new int[0];
			fixed (int* p = v.Length == 0 ? new int[1] : v)
			{
				var ptr = (IntPtr)p;
				return Make(op, () => f(v.Length == 0 ? IntPtr.Zero : ptr));
			}
		}

		/// <summary>Convolution on |x|w|bias (optional)|: groups, count filters, kernel (kh, kw, c); stride and padding from the hint.</summary>
		public static unsafe Cmd Convolution(int groups, int count, params int[] kernel)
		{
			if (kernel == null || kernel.Length == 0 || kernel.Length > Nnc.Native.MaxDims)
				throw new NncException(ErrorCode.Invalid, "Convolution", "a kernel has 1 to " + Nnc.Native.MaxDims + " dimensions");
			return WithInts("Convolution", kernel, p => Nnc.Native.ccv_nnc_cmd_convolution_forward(groups, count, kernel.Length, (int*)p));
		}

		public static Cmd MaxPool(int rows, int cols) { return Make("MaxPool", () => Nnc.Native.ccv_nnc_cmd_max_pool_forward(rows, cols)); }
		public static Cmd AveragePool(int rows, int cols) { return Make("AveragePool", () => Nnc.Native.ccv_nnc_cmd_average_pool_forward(rows, cols)); }
		public static Cmd ReLU() { return Make("ReLU", () => Nnc.Native.ccv_nnc_cmd_relu_forward()); }
		public static Cmd Sigmoid() { return Make("Sigmoid", () => Nnc.Native.ccv_nnc_cmd_sigmoid_forward()); }
		public static Cmd Tanh() { return Make("Tanh", () => Nnc.Native.ccv_nnc_cmd_tanh_forward()); }
		public static Cmd Gelu(bool tanhApproximation = false) { return Make("Gelu", () => Nnc.Native.ccv_nnc_cmd_gelu_forward(tanhApproximation ? 1 : 0)); }
		public static Cmd Swish() { return Make("Swish", () => Nnc.Native.ccv_nnc_cmd_swish_forward()); }
		public static Cmd LeakyReLU(float negativeSlope) { return Make("LeakyReLU", () => Nnc.Native.ccv_nnc_cmd_leaky_relu_forward(negativeSlope)); }
		/// <summary>Softmax over the last axis.</summary>
		public static Cmd Softmax() { return Make("Softmax", () => Nnc.Native.ccv_nnc_cmd_softmax_forward()); }
		/// <summary>|logits|labels| → |loss per row|softmax|; label smoothing turns 0 into trim0 and 1 into trim1.</summary>
		public static Cmd SoftmaxCrossEntropy(float trim0 = 0, float trim1 = 1) { return Make("SoftmaxCrossEntropy", () => Nnc.Native.ccv_nnc_cmd_softmax_crossentropy_forward(trim0, trim1)); }
		/// <summary>|x|y| → loss per row.</summary>
		public static Cmd Mse(MseReduce reduce = MseReduce.Mean) { return Make("Mse", () => Nnc.Native.ccv_nnc_cmd_mse_forward((int)reduce)); }
		public static Cmd EwSum() { return Make("EwSum", () => Nnc.Native.ccv_nnc_cmd_ewsum_forward()); }
		public static Cmd EwProd() { return Make("EwProd", () => Nnc.Native.ccv_nnc_cmd_ewprod_forward()); }
		public static Cmd EwDiv() { return Make("EwDiv", () => Nnc.Native.ccv_nnc_cmd_ewdiv_forward()); }
		public static Cmd EwExp() { return Make("EwExp", () => Nnc.Native.ccv_nnc_cmd_ewexp_forward()); }
		public static Cmd EwLog() { return Make("EwLog", () => Nnc.Native.ccv_nnc_cmd_ewlog_forward()); }
		public static Cmd EwSqrt() { return Make("EwSqrt", () => Nnc.Native.ccv_nnc_cmd_ewsqrt_forward()); }
		/// <summary>p·a + q·b with broadcasting.</summary>
		public static Cmd Add(float p, float q) { return Make("Add", () => Nnc.Native.ccv_nnc_cmd_add_forward(p, q)); }
		/// <summary>p·a·b with broadcasting.</summary>
		public static Cmd Mul(float p) { return Make("Mul", () => Nnc.Native.ccv_nnc_cmd_mul_forward(p)); }
		public static Cmd ScalarMul(float a) { return Make("ScalarMul", () => Nnc.Native.ccv_nnc_cmd_scalar_mul_forward(a)); }
		/// <summary>|x|scale|bias|mean|var| → |y|mean|var|saved mean|saved inv std|, statistics over the axes.</summary>
		public static unsafe Cmd BatchNorm(float epsilon, bool isTest, float momentum, params int[] axes)
		{
			return WithInts("BatchNorm", axes, p => Nnc.Native.ccv_nnc_cmd_batch_norm_forward(epsilon, isTest ? 1 : 0, momentum, axes == null ? 0 : axes.Length, (int*)p));
		}
		public static unsafe Cmd LayerNorm(float epsilon, bool elementwiseAffine, params int[] axes)
		{
			return WithInts("LayerNorm", axes, p => Nnc.Native.ccv_nnc_cmd_layer_norm_forward(epsilon, elementwiseAffine ? 1 : 0, axes == null ? 0 : axes.Length, (int*)p));
		}
		/// <summary>|g|w|momentum| → |w'|momentum'|.</summary>
		public static Cmd Sgd(bool nesterov, float rate, float scale, float decay, float momentum, float dampening)
		{
			return Make("Sgd", () => Nnc.Native.ccv_nnc_cmd_sgd_forward(nesterov ? 1 : 0, rate, scale, decay, momentum, dampening));
		}
		/// <summary>Adam at a 1-based step: |g|w|m|v| → |w'|m'|v'|.</summary>
		public static Cmd Adam(int step, float rate, float beta1, float beta2, float decay, float epsilon, bool amsgrad = false)
		{
			return Make("Adam", () => Nnc.Native.ccv_nnc_cmd_adam_forward(step, rate, beta1, beta2, decay, epsilon, amsgrad ? 1 : 0));
		}
		public static Cmd AdamW(int step, float rate, float beta1, float beta2, float decay, float epsilon, bool amsgrad = false)
		{
			return Make("AdamW", () => Nnc.Native.ccv_nnc_cmd_adamw_forward(step, rate, beta1, beta2, decay, epsilon, amsgrad ? 1 : 0));
		}
		public static Cmd SetValue(float value) { return Make("SetValue", () => Nnc.Native.ccv_nnc_cmd_set_forward(value)); }
		public static Cmd DataTransfer() { return Make("DataTransfer", () => Nnc.Native.ccv_nnc_cmd_data_transfer_forward()); }
		public static Cmd Transpose(int axisA, int axisB) { return Make("Transpose", () => Nnc.Native.ccv_nnc_cmd_transpose_forward(axisA, axisB)); }
		public static unsafe Cmd ReduceSum(params int[] axes)
		{
			return WithInts("ReduceSum", axes, p => Nnc.Native.ccv_nnc_cmd_reduce_sum_forward(axes == null ? 0 : axes.Length, (int*)p));
		}
		public static unsafe Cmd ReduceMean(params int[] axes)
		{
			return WithInts("ReduceMean", axes, p => Nnc.Native.ccv_nnc_cmd_reduce_mean_forward(axes == null ? 0 : axes.Length, (int*)p));
		}
		/// <summary>Any command by identifier with default parameters.</summary>
		public static unsafe Cmd FromId(uint id) { return Make("FromId", () => Nnc.Native.ccv_nnc_cmd_make(id, null)); }

		/// <summary>Run the command on inputs into outputs (null: an empty slot), returning when done.</summary>
		public void Exec(Tensor[] inputs, Tensor[] outputs) { Exec(Hint.None, inputs, outputs, null); }
		public void Exec(Hint hint, Tensor[] inputs, Tensor[] outputs) { Exec(hint, inputs, outputs, null); }

		/// <summary>Queue the command on a stream (errors while it runs come from Stream.Wait).</summary>
		public void Exec(Hint hint, Tensor[] inputs, Tensor[] outputs, Stream stream)
		{
			int r = ExecCore(hint, inputs, outputs, stream);
			if (r != 0)
				throw NncException.Last(Op, r);
		}

		/// <summary>Exec without the exception: the C code (0 on success); Library.LastMessage says why on this thread.</summary>
		public int TryExec(Tensor[] inputs, Tensor[] outputs) { return ExecCore(Hint.None, inputs, outputs, null); }

		// The hot path takes no reference on the tensors' handles (an interlocked
		// pair each, which cost more than the call itself under Mono): a disposed
		// tensor is refused, and GC.KeepAlive keeps finalizers off them until the
		// call returns. Disposing a tensor while another thread runs a command on
		// it is the caller's race, as for any IDisposable.
		unsafe int ExecCore(Hint hint, Tensor[] inputs, Tensor[] outputs, Stream stream)
		{
			int ni = inputs == null ? 0 : inputs.Length, no = outputs == null ? 0 : outputs.Length;
			IntPtr* ptrs = stackalloc IntPtr[ni + no + 1];
			for (int i = 0; i < ni + no; i++)
			{
				var t = i < ni ? inputs[i] : outputs[i - ni];
				if (t == null) { ptrs[i] = IntPtr.Zero; continue; }
				if (t.Handle.IsClosed)
					throw new ObjectDisposedException("Tensor", Op + ": a tensor is disposed");
				ptrs[i] = t.Handle.DangerousGetHandle();
			}
			IntPtr s = IntPtr.Zero;
			if (stream != null)
			{
				if (stream.Handle.IsClosed)
					throw new ObjectDisposedException("Stream", Op + ": the stream is disposed");
				s = stream.Handle.DangerousGetHandle();
				stream.Keep(inputs, outputs);
			}
			int r = Nnc.Native.ccv_nnc_cmd_exec_p(Ptr, hint.Ptr, 0, ptrs, ni, ptrs + ni, no, s);
			GC.KeepAlive(Box);
			GC.KeepAlive(hint.Box);
			GC.KeepAlive(inputs);
			GC.KeepAlive(outputs);
			GC.KeepAlive(stream);
			return r;
		}
	}
}
