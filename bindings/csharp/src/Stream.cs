using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;

namespace Nnc
{
	/// <summary>Owns a C stream; releasing it waits for the stream first.</summary>
	public sealed class StreamHandle : SafeHandle
	{
		internal StreamHandle() : base(IntPtr.Zero, true) { }
		public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
		internal void Set(IntPtr p) { SetHandle(p); }
		protected override bool ReleaseHandle()
		{
			Native.ccv_nnc_stream_context_free(handle);
			return true;
		}
	}

	/// <summary>
	/// A CPU stream: commands queued on it run in order on its own thread.
	/// Tensors given to a queued command are kept referenced until Wait returns.
	/// </summary>
	public sealed class Stream : IDisposable
	{
		internal readonly StreamHandle Handle = new StreamHandle();
		readonly List<Tensor[]> pending = new List<Tensor[]>();

		public Stream()
		{
			Library.Init();
			var p = Native.ccv_nnc_stream_context_new(Native.StreamContextCpu);
			if (p == IntPtr.Zero)
				throw NncException.Last("Stream", -1);
			Handle.Set(p);
		}

		internal void Keep(Tensor[] inputs, Tensor[] outputs)
		{
			lock (pending)
			{
				pending.Add(inputs);
				pending.Add(outputs);
			}
		}

		/// <summary>Block until everything queued has run; throws the first failure of a queued command
		/// (the stream then runs what is queued next).</summary>
		public void Wait()
		{
			bool added = false;
			try
			{
				Handle.DangerousAddRef(ref added);
				Native.ccv_nnc_error_clear();
				Native.ccv_nnc_stream_context_wait(Handle.DangerousGetHandle());
				try
				{
					NncException.CheckVoid("Stream.Wait");
				}
				catch (NncException)
				{
					// The failure is this exception now: taken from the stream, so the
					// C library does not also return it from the next command.
					Native.ccv_nnc_stream_context_error(Handle.DangerousGetHandle());
					throw;
				}
			}
			finally
			{
				if (added)
					Handle.DangerousRelease();
				lock (pending)
					pending.Clear();
			}
		}

		/// <summary>Wait for the stream and free it. Idempotent.</summary>
		public void Dispose()
		{
			Handle.Dispose();
			lock (pending)
				pending.Clear();
		}
	}
}
