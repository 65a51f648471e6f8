using System;
using System.Runtime.InteropServices;

namespace Nnc
{
	/// <summary>Owns a C dynamic graph (and with it every variable of it).</summary>
	public sealed class GraphHandle : SafeHandle
	{
		internal GraphHandle() : base(IntPtr.Zero, true) { }
		public override bool IsInvalid { get { return handle == IntPtr.Zero; } }
		internal void Set(IntPtr p) { SetHandle(p); }
		protected override bool ReleaseHandle()
		{
			Native.ccv_nnc_dynamic_graph_free(handle);
			return true;
		}
	}

	/// <summary>
	/// A dynamic graph: commands on its variables run at once and are traced, so
	/// Backward and Minimize can differentiate them. Calls on a graph and its
	/// variables are serialised by the graph's lock.
	/// </summary>
	public sealed class Graph : IDisposable
	{
		internal readonly GraphHandle Handle = new GraphHandle();
		internal readonly object Lock = new object();

		public Graph()
		{
			Library.Init();
			var p = Native.ccv_nnc_dynamic_graph_new();
			if (p == IntPtr.Zero)
				throw NncException.Last("Graph", -1);
			Handle.Set(p);
		}

		/// <summary>Free the graph and all its variables (their Dispose then does nothing). Idempotent.</summary>
		public void Dispose()
		{
			lock (Lock)
				Handle.Dispose();
		}

		internal IntPtr Ptr(string op)
		{
			if (Handle.IsClosed)
				throw new ObjectDisposedException("Graph", op + ": the graph is disposed");
			return Handle.DangerousGetHandle();
		}

		Variable NewVar(string op, TensorParamNative p, bool constant)
		{
			lock (Lock)
			{
				var g = Ptr(op);
				Native.ccv_nnc_error_clear();
				var v = constant ? Native.ccv_nnc_tensor_constant_new_impl(g, p) : Native.ccv_nnc_tensor_variable_new_impl(g, p);
				if (v == IntPtr.Zero)
					throw NncException.Last(op, -1);
				return new Variable(this, v);
			}
		}

		/// <summary>A variable of this type, layout and shape.</summary>
		public Variable NewVariable(DataType dt, Format f, params int[] shape) { return NewVar("NewVariable", Tensor.Params(dt, f, shape), false); }
		/// <summary>A variable without a shape: the first command writing it gives one.</summary>
		public Variable NewVariable() { return NewVar("NewVariable", default(TensorParamNative), false); }
		/// <summary>A constant (no gradient flows to it).</summary>
		public Variable NewConstant(DataType dt, Format f, params int[] shape) { return NewVar("NewConstant", Tensor.Params(dt, f, shape), true); }

		/// <summary>An NHWC float32 variable holding a copy of data.</summary>
		public Variable Variable(float[] data, params int[] shape)
		{
			var v = NewVariable(DataType.Float32, Format.NHWC, shape);
			try { v.CopyFrom(data); } catch { v.Dispose(); throw; }
			return v;
		}

		/// <summary>An NHWC float32 constant holding a copy of data.</summary>
		public Variable Constant(float[] data, params int[] shape)
		{
			var v = NewConstant(DataType.Float32, Format.NHWC, shape);
			try { v.CopyFrom(data); } catch { v.Dispose(); throw; }
			return v;
		}

		static unsafe void Fill(IntPtr* dst, Variable[] vars, Graph g, string op)
		{
			if (vars == null) return;
			for (int i = 0; i < vars.Length; i++)
			{
				var v = vars[i];
				if (v == null) { dst[i] = IntPtr.Zero; continue; }
				if (v.Graph != g)
					throw new NncException(ErrorCode.Invalid, op, "a variable of another graph");
				dst[i] = v.Ptr(op);
			}
		}

		static int Len(Variable[] v) { return v == null ? 0 : v.Length; }

		/// <summary>Run cmd now on the input variables into the outputs (outputs without a shape take the command's), traced.</summary>
		public unsafe void Exec(Cmd cmd, Hint hint, Variable[] inputs, Variable[] outputs)
		{
			const string op = "Graph.Exec";
			lock (Lock)
			{
				var g = Ptr(op);
				IntPtr* ins = stackalloc IntPtr[Len(inputs) + 1];
				IntPtr* outs = stackalloc IntPtr[Len(outputs) + 1];
				Fill(ins, inputs, this, op);
				Fill(outs, outputs, this, op);
				int r = Native.ccv_nnc_dynamic_graph_exec_p(g, cmd.Ptr, hint.Ptr, 0, ins, Len(inputs), outs, Len(outputs), 0, IntPtr.Zero);
				GC.KeepAlive(cmd.Box);
				GC.KeepAlive(hint.Box);
				if (r != 0)
					throw NncException.Last(op, r);
			}
		}

		public void Exec(Cmd cmd, Variable[] inputs, Variable[] outputs) { Exec(cmd, Hint.None, inputs, outputs); }

		/// <summary>d(sum of fs)/d wrt: one new variable per wrt.</summary>
		public unsafe Variable[] Backward(Variable[] fs, Variable[] wrt)
		{
			const string op = "Graph.Backward";
			if (fs == null || fs.Length == 0 || wrt == null || wrt.Length == 0)
				throw new NncException(ErrorCode.Invalid, op, "give the functions and the variables to differentiate them by");
			var grads = new Variable[wrt.Length];
			lock (Lock)
			{
				var g = Ptr(op);
				IntPtr* f = stackalloc IntPtr[fs.Length];
				IntPtr* ins = stackalloc IntPtr[wrt.Length];
				IntPtr* outs = stackalloc IntPtr[wrt.Length];
				Fill(f, fs, this, op);
				Fill(ins, wrt, this, op);
				for (int i = 0; i < grads.Length; i++)
				{
					grads[i] = NewVariable();
					outs[i] = grads[i].Ptr(op);
				}
				Native.ccv_nnc_error_clear();
				Native.ccv_nnc_dynamic_graph_backward(g, f, fs.Length, null, ins, wrt.Length, outs, wrt.Length, IntPtr.Zero);
				if (Native.Failed())
				{
					var e = NncException.Last(op, -1);
					foreach (var v in grads) v.Dispose();
					throw e;
				}
			}
			return grads;
		}

		/// <summary>Backward from the losses to the optimizer's parameters, then one minimiser step on each.</summary>
		public unsafe void Minimize(Optimizer optimizer, params Variable[] losses)
		{
			const string op = "Graph.Minimize";
			lock (Lock)
			{
				var g = Ptr(op);
				var ps = optimizer.Parameters;
				var aux = optimizer.State;
				IntPtr* l = stackalloc IntPtr[Len(losses) + 1];
				IntPtr* p = stackalloc IntPtr[ps.Length + 1];
				IntPtr* a = stackalloc IntPtr[aux.Length + 1];
				Fill(l, losses, this, op);
				Fill(p, ps, this, op);
				Fill(a, aux, this, op);
				var cmd = optimizer.Cmd;
				Native.ccv_nnc_error_clear();
				int r = Native.ccv_nnc_dynamic_graph_minimize_p(g, cmd.Ptr, l, Len(losses), null, p, ps.Length, a, 0, IntPtr.Zero);
				GC.KeepAlive(cmd.Box);
				if (r != 0)
					throw NncException.Last(op, r);
			}
		}
	}

	/// <summary>A variable of a dynamic graph. Dispose frees it; after the graph's Dispose it does nothing.</summary>
	public sealed class Variable : IDisposable
	{
		internal readonly Graph Graph;
		IntPtr v;

		internal Variable(Graph g, IntPtr p) { Graph = g; v = p; }

		~Variable()
		{
			// A backstop: free the variable if the graph is still open and not busy.
			if (v == IntPtr.Zero || Graph.Handle.IsClosed)
				return;
			if (System.Threading.Monitor.TryEnter(Graph.Lock))
			{
				try { Release(); }
				finally { System.Threading.Monitor.Exit(Graph.Lock); }
			}
		}

		void Release()
		{
			if (v == IntPtr.Zero)
				return;
			bool added = false;
			try
			{
				Graph.Handle.DangerousAddRef(ref added);
				Native.ccv_nnc_tensor_variable_free(Graph.Handle.DangerousGetHandle(), v);
			}
			catch (ObjectDisposedException) { }
			finally
			{
				if (added)
					Graph.Handle.DangerousRelease();
				v = IntPtr.Zero;
			}
		}

		/// <summary>Free the variable. Idempotent.</summary>
		public void Dispose()
		{
			lock (Graph.Lock)
				Release();
			GC.SuppressFinalize(this);
		}

		internal IntPtr Ptr(string op)
		{
			if (v == IntPtr.Zero || Graph.Handle.IsClosed)
				throw new ObjectDisposedException("Variable", op + ": the variable or its graph is disposed");
			return v;
		}

		/// <summary>The shape (empty without one).</summary>
		public unsafe int[] Shape
		{
			get
			{
				lock (Graph.Lock)
				{
					var p = Native.ccv_nnc_tensor_variable_params(Graph.Ptr("Variable.Shape"), Ptr("Variable.Shape"));
					int n = 0;
					while (n < Native.MaxDims && p.Dim[n] != 0) n++;
					var s = new int[n];
					for (int i = 0; i < n; i++) s[i] = p.Dim[i];
					return s;
				}
			}
		}

		unsafe void Copy(Array values, DataType dt, bool into)
		{
			string op = into ? "Variable.CopyFrom" : "Variable.ToArray";
			lock (Graph.Lock)
			{
				Native.ccv_nnc_error_clear();
				var t = Native.ccv_nnc_tensor_from_variable_impl(Graph.Ptr(op), Ptr(op), IntPtr.Zero);
				if (t == IntPtr.Zero)
					throw NncException.Last(op, -1);
				var pin = GCHandle.Alloc(values, GCHandleType.Pinned);
				try
				{
					void* mem = (void*)pin.AddrOfPinnedObject();
					var n = (UIntPtr)(ulong)values.LongLength;
					int r = into ? Native.ccv_nnc_tensor_copy_from(t, mem, (int)dt, n) : Native.ccv_nnc_tensor_copy_to(t, mem, (int)dt, n);
					NncException.Check(op, r);
				}
				finally { pin.Free(); }
			}
		}

		/// <summary>Copy values into the variable's tensor (converting to its type).</summary>
		public void CopyFrom(float[] values) { Copy(values, DataType.Float32, true); }

		/// <summary>A copy of the variable's value as float32.</summary>
		public float[] ToFloatArray()
		{
			long n = 1;
			var s = Shape;
			if (s.Length == 0)
				throw new NncException(ErrorCode.Invalid, "Variable.ToArray", "the variable has no value yet");
			foreach (var d in s) n *= d;
			var a = new float[n];
			Copy(a, DataType.Float32, false);
			return a;
		}
	}

	/// <summary>A minimiser with its per-parameter state (momenta) for Graph.Minimize.</summary>
	public sealed class Optimizer : IDisposable
	{
		/// <summary>The minimiser (replace it for a new Adam step or rate; the state is kept).</summary>
		public Cmd Cmd;
		internal readonly Variable[] Parameters;
		internal readonly Variable[] State;

		public Optimizer(Graph graph, Cmd minimizer, params Variable[] parameters)
		{
			Cmd = minimizer;
			Parameters = (Variable[])parameters.Clone();
			int n = Native.ccv_nnc_minimizer_saved_aux_size(minimizer.Native);
			if (n < 0)
				throw new NncException(ErrorCode.Invalid, "Optimizer", minimizer.Name + " is not a minimiser");
			State = new Variable[n * parameters.Length];
			for (int i = 0; i < State.Length; i++)
				State[i] = graph.NewVariable();
		}

		public void Dispose()
		{
			foreach (var v in State)
				v.Dispose();
		}
	}
}
