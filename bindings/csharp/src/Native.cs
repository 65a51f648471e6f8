// P/Invoke declarations of the C API (include/nnc/ccv_nnc.h) that the binding uses.
// Big structs (commands, hints) go by reference to the *_p variants; handles
// are IntPtr here and owned by the SafeHandle classes.
using System;
using System.Runtime.InteropServices;

namespace Nnc
{
	[StructLayout(LayoutKind.Sequential)]
	internal unsafe struct TensorParamNative
	{
		public int Type;
		public int Format;
		public int DataType;
		public int Reserved;
		public fixed int Dim[Native.MaxDims];
	}

	/// <summary>ccv_nnc_cmd_t: the id, backend and algorithm, then the parameters as bytes.</summary>
	[StructLayout(LayoutKind.Sequential)]
	internal unsafe struct CmdNative
	{
		public uint Cmd;
		public uint Backend;
		public int Algorithm;
		private int padding;
		public fixed byte Info[Native.CmdParamSize];
		public IntPtr Isa;
		public IntPtr Data;
	}

	[StructLayout(LayoutKind.Sequential)]
	internal unsafe struct HintNative
	{
		public fixed int Stride[Native.MaxDims];
		public fixed int BorderBegin[Native.MaxDims];
		public fixed int BorderEnd[Native.MaxDims];
	}

	[StructLayout(LayoutKind.Sequential)]
	internal struct EvaluateParamNative
	{
		public int RequiresGrad;
		public int IsTest;
		public ulong DisableOutgrad;
	}

	[System.Security.SuppressUnmanagedCodeSecurity]
	internal static unsafe class Native
	{
		const string Lib = "nnc";
		public const int MaxDims = 12;
		public const int CmdParamSize = 120;

		public const int TensorCpuMemory = 0x1;
		public const int StreamContextCpu = 0x1;

		// Level 0
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_nnc_init();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_nnc_error_message();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_nnc_error_clear();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_nnc_version();

		// Bindings support (ABI version 1, bindings/C_API.md)
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_nnc_abi_version();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern UIntPtr ccv_nnc_type_size(int type);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern long ccv_nnc_live_object_count(int kind);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_nnc_tensor_get_params(IntPtr tensor, out TensorParamNative p);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_nnc_tensor_data_ptr(IntPtr tensor);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_nnc_tensor_is_view(IntPtr tensor);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_nnc_tensor_get_strides(IntPtr tensor, int* stride);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_nnc_tensor_copy_from(IntPtr tensor, void* values, int datatype, UIntPtr count);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_nnc_tensor_copy_to(IntPtr tensor, void* values, int datatype, UIntPtr count);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern HintNative ccv_nnc_hint_make(int rank, int* stride, int* borderBegin, int* borderEnd);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern HintNative ccv_nnc_hint_auto_p(CmdNative* cmd, ref TensorParamNative a, ref TensorParamNative b);

		// Commands
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_gemm_forward(int* transposeA, int* transposeB);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_convolution_forward(int groups, int count, int kernelRank, int* kernelDims);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_max_pool_forward(int rows, int cols);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_average_pool_forward(int rows, int cols);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_relu_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_sigmoid_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_tanh_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_gelu_forward(int tanhApproximation);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_swish_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_leaky_relu_forward(float negativeSlope);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_softmax_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_softmax_crossentropy_forward(float trim0, float trim1);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_mse_forward(int reduceOp);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_ewsum_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_ewprod_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_ewdiv_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_ewexp_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_ewlog_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_ewsqrt_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_add_forward(float p, float q);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_mul_forward(float p);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_scalar_mul_forward(float a);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_batch_norm_forward(float epsilon, int isTest, float momentum, int axisCount, int* axis);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_layer_norm_forward(float epsilon, int elementwiseAffine, int axisCount, int* axis);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_sgd_forward(int nesterov, float rate, float scale, float decay, float momentum, float dampening);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_adam_forward(int step, float rate, float beta1, float beta2, float decay, float epsilon, int amsgrad);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_adamw_forward(int step, float rate, float beta1, float beta2, float decay, float epsilon, int amsgrad);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_set_forward(float value);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_data_transfer_forward();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_transpose_forward(int axisA, int axisB);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_reduce_sum_forward(int axisCount, int* axis);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_reduce_mean_forward(int axisCount, int* axis);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern CmdNative ccv_nnc_cmd_make(uint cmdId, void* parameters);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_nnc_cmd_name(uint cmd);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_nnc_cmd_exec_p(CmdNative* cmd, HintNative* hint, int flags, IntPtr* inputs, int inputSize, IntPtr* outputs, int outputSize, IntPtr stream);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_nnc_minimizer_saved_aux_size(CmdNative minimizer);

		// Tensors
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_nnc_tensor_new(IntPtr ptr, TensorParamNative p, int flags);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_nnc_tensor_free(IntPtr tensor);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_nnc_tensor_view_new(IntPtr tensor, TensorParamNative p, int* ofs, int* stride);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_nnc_tensor_view_free(IntPtr view);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_nnc_tensor_zero(IntPtr tensor);

		// Streams
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_nnc_stream_context_new(int type);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_nnc_stream_context_wait(IntPtr stream);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_nnc_stream_context_error(IntPtr stream);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_nnc_stream_context_free(IntPtr stream);

		// Dynamic graph
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_nnc_dynamic_graph_new();
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_nnc_dynamic_graph_free(IntPtr graph);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_nnc_tensor_variable_new_impl(IntPtr graph, TensorParamNative info);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_nnc_tensor_constant_new_impl(IntPtr graph, TensorParamNative info);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_nnc_tensor_variable_free(IntPtr graph, IntPtr variable);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_nnc_tensor_from_variable_impl(IntPtr graph, IntPtr variable, IntPtr stream);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern TensorParamNative ccv_nnc_tensor_variable_params(IntPtr graph, IntPtr variable);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_nnc_dynamic_graph_exec_p(IntPtr graph, CmdNative* cmd, HintNative* hint, int flags, IntPtr* inputs, int inputSize, IntPtr* outputs, int outputSize, int parallel, IntPtr stream);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_nnc_dynamic_graph_backward(IntPtr graph, IntPtr* f, int fSize, IntPtr* df, IntPtr* inputs, int inputSize, IntPtr* outputs, int outputSize, IntPtr stream);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_nnc_dynamic_graph_minimize_p(IntPtr graph, CmdNative* minimizer, IntPtr* losses, int lossSize, IntPtr* dloss, IntPtr* parameters, int parameterSize, IntPtr* savedAux, int parallel, IntPtr stream);

		// Models
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_cnnp_dense(int count, int noBias, int flags, int isTrainable, IntPtr name);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_cnnp_relu(IntPtr name);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_cnnp_sigmoid(IntPtr name);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_cnnp_tanh(IntPtr name);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_cnnp_softmax(IntPtr name);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_cnnp_flatten(IntPtr name);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_cnnp_convolution(int groups, int filters, int* kdim, int* dilation, int noBias, HintNative hint, int format, int isTrainable, IntPtr name);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_cnnp_max_pool(int* kdim, HintNative hint, IntPtr name);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_cnnp_average_pool(int* kdim, HintNative hint, IntPtr name);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_cnnp_batch_norm(float momentum, float epsilon, int isTrainable, IntPtr name);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern IntPtr ccv_cnnp_sequential_new(IntPtr* models, int modelSize, int isTrainable, IntPtr name);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern int ccv_cnnp_model_compile_p(IntPtr model, TensorParamNative* inputs, int inputSize, CmdNative* minimizer, CmdNative* loss);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_cnnp_model_fit(IntPtr model, IntPtr* inputs, int inputSize, IntPtr* fits, int fitSize, IntPtr* outputs, int outputSize, IntPtr tape, IntPtr stream);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_cnnp_model_evaluate(IntPtr model, EvaluateParamNative p, IntPtr* inputs, int inputSize, IntPtr* outputs, int outputSize, IntPtr tape, IntPtr stream);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_cnnp_model_set_minimizer(IntPtr model, CmdNative minimizer, int reset, IntPtr parameters, int parameterSize);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_cnnp_model_write_to_file(IntPtr model, [MarshalAs(UnmanagedType.LPStr)] string fn, IntPtr options);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_cnnp_model_read_from_file([MarshalAs(UnmanagedType.LPStr)] string fn, IntPtr options, IntPtr model);
		[DllImport(Lib, CallingConvention = CallingConvention.Cdecl, ExactSpelling = true)] public static extern void ccv_cnnp_model_free(IntPtr model);

		public static string Message()
		{
			var p = ccv_nnc_error_message();
			return p == IntPtr.Zero ? "" : (Marshal.PtrToStringAnsi(p) ?? "");
		}

		/// <summary>Whether the last void call on this thread failed (it left a message).</summary>
		public static bool Failed()
		{
			var p = ccv_nnc_error_message();
			return p != IntPtr.Zero && Marshal.ReadByte(p) != 0;
		}
	}
}
