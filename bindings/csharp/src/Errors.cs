using System;

namespace Nnc
{
	/// <summary>The C API's result codes (CCV_NNC_EXEC_*).</summary>
	public enum ErrorCode
	{
		Success = 0,
		Invalid = -1,
		NoKernel = -2,
		OutOfMemory = -3,
	}

	/// <summary>
	/// A failure reported by the C library: its code and the message
	/// ccv_nnc_error_message() gave on the thread that made the call.
	/// </summary>
	public class NncException : Exception
	{
		public ErrorCode Code { get; private set; }
		/// <summary>The C library's message (without the operation prefix).</summary>
		public string NativeMessage { get; private set; }
		/// <summary>What the binding was doing.</summary>
		public string Operation { get; private set; }

		public NncException(ErrorCode code, string operation, string nativeMessage)
			: base(Format(code, operation, nativeMessage))
		{
			Code = code;
			Operation = operation;
			NativeMessage = nativeMessage;
		}

		static string Format(ErrorCode code, string op, string msg)
		{
			var s = "nnc: " + op + ": " + code;
			return string.IsNullOrEmpty(msg) ? s : s + ": " + msg;
		}

		/// <summary>The exception for a failed call, with this thread's C message. Call right after it.</summary>
		internal static NncException Last(string operation, int code)
		{
			var c = code < 0 ? (ErrorCode)code : ErrorCode.Invalid;
			return new NncException(c, operation, Native.Message());
		}

		internal static void Check(string operation, int code)
		{
			if (code != 0)
				throw Last(operation, code);
		}

		/// <summary>Throw if the last void call left a message.</summary>
		internal static void CheckVoid(string operation)
		{
			if (Native.Failed())
				throw Last(operation, (int)ErrorCode.Invalid);
		}
	}

	/// <summary>Library-wide calls.</summary>
	public static class Library
	{
		static readonly object initLock = new object();
		static bool initialised;

		/// <summary>Initialise the C library (done by every entry point; safe to call again).</summary>
		public static void Init()
		{
			if (initialised)
				return;
			lock (initLock)
			{
				if (initialised)
					return;
				Native.ccv_nnc_init();
				CheckLayout();
				initialised = true;
			}
		}

		/// <summary>The C library's version, "MAJOR.MINOR.PATCH".</summary>
		public static string Version
		{
			get { Init(); return System.Runtime.InteropServices.Marshal.PtrToStringAnsi(Native.ccv_nnc_version()); }
		}

		/// <summary>This thread's last C error message ("" if none), e.g. after Cmd.TryExec.</summary>
		public static string LastMessage { get { return Native.Message(); } }

		/// <summary>The ABI version this binding was written for.</summary>
		public const int AbiVersion = 1;

		/// <summary>
		/// Objects of a kind alive now in the process (CCV_NNC_LIVE_*: 0 tensors, 1 streams,
		/// 7 dynamic graphs, 8 variables, 9 models); a negative kind sums all kinds.
		/// </summary>
		public static long LiveObjects(LiveKind kind)
		{
			Init();
			return Native.ccv_nnc_live_object_count((int)kind);
		}

		// The struct layouts here must be the library's: refuse to run otherwise.
		static unsafe void CheckLayout()
		{
			int abi = Native.ccv_nnc_abi_version();
			if (abi != AbiVersion)
				throw new NncException(ErrorCode.Invalid, "Init", "the library's ABI version is " + abi + ", this binding's " + AbiVersion);
			Expect(1, sizeof(TensorParamNative), "ccv_nnc_tensor_param_t");
			Expect(2, Native.CmdParamSize, "ccv_nnc_cmd_param_t");
			Expect(3, sizeof(CmdNative), "ccv_nnc_cmd_t");
			Expect(4, sizeof(HintNative), "ccv_nnc_hint_t");
			Expect(12, sizeof(EvaluateParamNative), "ccv_cnnp_evaluate_param_t");
		}

		static void Expect(int type, int size, string name)
		{
			var native = (long)Native.ccv_nnc_type_size(type).ToUInt64();
			if (native != size)
				throw new NncException(ErrorCode.Invalid, "Init", name + " is " + native + " bytes in the library, " + size + " in the binding");
		}
	}

	/// <summary>Kinds for Library.LiveObjects (CCV_NNC_LIVE_*).</summary>
	public enum LiveKind
	{
		All = -1,
		Tensor = 0,
		StreamContext = 1,
		StreamSignal = 2,
		Graph = 3,
		SymbolicGraph = 4,
		DynamicGraph = 7,
		TensorVariable = 8,
		Model = 9,
	}
}
