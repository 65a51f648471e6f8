using System;
using NUnit.Framework;

namespace Nnc.Tests
{
	static class Util
	{
		public static float[] Rand(Random r, int n)
		{
			var v = new float[n];
			for (int i = 0; i < n; i++) v[i] = (float)(r.NextDouble() * 2 - 1);
			return v;
		}

		public static void Same(string what, float[] got, float[] want)
		{
			Assert.AreEqual(want.Length, got.Length, what + ": length");
			for (int i = 0; i < got.Length; i++)
				if (got[i] != want[i] && !(float.IsNaN(got[i]) && float.IsNaN(want[i])))
					Assert.Fail(what + ": element " + i + " is " + got[i].ToString("R") + ", C gave " + want[i].ToString("R"));
		}

		public static void Close(string what, float[] got, double[] want, double tol)
		{
			Assert.AreEqual(want.Length, got.Length, what + ": length");
			for (int i = 0; i < got.Length; i++)
				if (Math.Abs(got[i] - want[i]) > tol * (1 + Math.Abs(want[i])) || float.IsNaN(got[i]))
					Assert.Fail(what + ": element " + i + " is " + got[i] + ", want " + want[i]);
		}
	}
}
