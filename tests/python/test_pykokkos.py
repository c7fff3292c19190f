"""The PyKokkos-compatible front end (docs/pykokkos.md): workunits translated from their
Python source, run fused and unfused, against numpy; policies from 0 and from an
offset, two-dimensional ranges, reductions, numpy arrays as views, and constructs
outside the subset refused with the file and line."""

import inspect
import math
import os
import runpy
import unittest

import numpy as np

import stitch
import stitch.pykokkos as pk


@pk.workunit
def saxpy(i: int, a: float, x: pk.View1D[pk.double], y: pk.View1D[pk.double]):
    y[i] = a * x[i] + y[i]


@pk.workunit
def dot(i: int, acc: pk.Acc[pk.double], x: pk.View1D[pk.double], y: pk.View1D[pk.double]):
    acc += x[i] * y[i]


@pk.workunit
def branches(i: int, x: pk.View1D[pk.double], n: int):
    s = 0.0
    for k in range(1, 4):
        s += x[i] * k
    if i % 2 == 0 and i < n:
        x[i] = s / 2 + i if i > 3 else -s
    elif i == 1:
        x[i] = math.sqrt(abs(s)) + max(s, 2.0)
    else:
        x[i] = abs(s) ** 2 - i // 2


@pk.workunit
def scale2d(i: int, j: int, a: float, m: pk.View2D[pk.double]):
    m[i][j] = m[i][j] * a + float(j)


@pk.workunit
def rowsum(i: int, m: pk.View2D[pk.double], s: pk.View1D[pk.double], cols: int):
    t = 0.0
    for j in range(cols):
        t += m[i, j]
    s[i] = t


@pk.workunit
def unsupported(i: int, x: pk.View1D[pk.double]):
    while x[i] > 1:
        x[i] = x[i] / 2


def program(n):
    x = pk.View([n], pk.double)
    y = pk.View([n], pk.double)
    x[:] = np.arange(n, dtype=np.float64) / 3
    pk.parallel_for(n, saxpy, a=2.0, x=x, y=y)
    pk.parallel_for("offset", pk.RangePolicy(pk.ExecutionSpace.OpenMP, 5, n), saxpy, a=1.0, x=x, y=y)
    d = pk.parallel_reduce(n, dot, x=x, y=y)
    pk.parallel_for(n, branches, x=x, n=n - 10)
    m = pk.View([7, 5], pk.double)
    m.fill(1.5)
    pk.parallel_for(pk.MDRangePolicy([0, 0], [7, 5]), scale2d, a=3.0, m=m)
    s = pk.View([7], pk.double)
    pk.parallel_for(7, rowsum, m=m, s=s, cols=5)
    pk.fence()
    return np.asarray(x), np.asarray(y), d, np.asarray(m), np.asarray(s)


def numpy_program(n):
    x = np.arange(n, dtype=np.float64) / 3
    y = 2.0 * x
    y[5:] += x[5:]
    d = float(np.dot(x, y))
    out = x.copy()
    for i in range(n):
        s = x[i] * 1 + x[i] * 2 + x[i] * 3
        if i % 2 == 0 and i < n - 10:
            out[i] = s / 2 + i if i > 3 else -s
        elif i == 1:
            out[i] = math.sqrt(abs(s)) + max(s, 2.0)
        else:
            out[i] = abs(s) ** 2 - i // 2
    m = np.full((7, 5), 1.5) * 3.0 + np.arange(5, dtype=np.float64)
    return out, y, d, m, m.sum(axis=1)


class PyKokkos(unittest.TestCase):
    def tearDown(self):
        pk.set_mode("fused")

    def check(self, mode):
        pk.set_mode(mode)
        got = program(1000)
        want = numpy_program(1000)
        for g, w, name in zip(got, want, ["x", "y", "dot", "m", "rowsum"]):
            np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=f"{mode}: {name}")
        return pk._runtime().stats()

    def test_fused_and_unfused_equal_numpy_and_the_interpreter(self):
        pk.set_mode("reference")  # every call in the reference interpreter, as it is made
        reference = program(1000)
        pk.set_mode("fused_reference")  # fused, each fused kernel run by the interpreter (its race checks)
        for got, want in zip(program(1000), reference):
            np.testing.assert_array_equal(got, want)
        unfused = self.check("unfused")
        fused = self.check("fused")
        pk.set_mode("fused")
        for got, want in zip(program(1000), reference):
            np.testing.assert_allclose(got, want, rtol=1e-12)  # the dot sums in another order
        self.assertEqual(unfused["kernels"], unfused["calls"])
        self.assertLess(fused["kernels"], unfused["kernels"])  # the two saxpys and the dot share a kernel

    def test_numpy_arrays_are_views_written_back(self):
        x = np.ones(64)
        y = np.zeros(64)
        pk.parallel_for(64, saxpy, a=4.0, x=x, y=y)
        np.testing.assert_array_equal(y, np.full(64, 4.0))
        self.assertEqual(pk.parallel_reduce(64, dot, x=x, y=y), 256.0)

    def test_what_is_outside_the_subset_names_the_construct_and_line(self):
        x = pk.View([4], pk.double)
        with self.assertRaises(stitch.Error) as e:
            pk.parallel_for(4, unsupported, x=x)
        line = inspect.getsourcelines(unsupported.fn)[1] + 2
        self.assertIn(f"test_pykokkos.py:{line}:", str(e.exception))
        self.assertIn("the statement While is not supported", str(e.exception))
        with self.assertRaises(stitch.Error):
            pk.parallel_for(4, saxpy, a=1.0, x=x)  # y is missing
        y = pk.View([6], pk.double)
        pk.parallel_for(6, saxpy, a=1.0, x=x, y=y)  # reads x[4] and x[5]: found when it runs
        with self.assertRaises(stitch.Error) as e:
            np.asarray(y)
        self.assertIn("outside axis 0 of extent 4", str(e.exception))
        with self.assertRaises(stitch.Error):
            pk.parallel_for(4, saxpy, a=1.0, x=x, y="y")

    def test_the_examples_match_numpy_fused_and_unfused(self):
        source = os.environ.get("STITCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
        examples = (("babelstream.py", (5000, 3)), ("jacobi_1d.py", (3000, 4)), ("nstream.py", (4096, 5)),
                    ("gups.py", (4096, 1024, 3)))
        for example, sizes in examples:
            steps = sizes[-1]
            program = runpy.run_path(os.path.join(source, "examples", "pykokkos", example), run_name="example")
            want = program["reference"](*sizes)
            kernels = {}
            for mode in ("unfused", "fused"):
                pk.set_mode(mode)
                got = program["run"](*sizes)
                for g, w in zip(got, want):
                    np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=f"{example}, {mode}")
                kernels[mode] = pk._runtime().stats()["kernels"]
            if example == "babelstream.py":  # each iteration: four parallel_fors and a dot in one kernel
                self.assertEqual(kernels["unfused"], 5 * steps)
                self.assertEqual(kernels["fused"], steps)
            if example == "nstream.py":  # the repeated calls of each fuse
                self.assertLessEqual(kernels["fused"], 3)
                self.assertEqual(kernels["unfused"], 2 * steps + 2)  # and a fill for each zeros read first
            if example == "gups.py":  # each iteration's advance and update share a kernel
                self.assertEqual(kernels["unfused"], 2 * steps)
                self.assertEqual(kernels["fused"], steps)


if __name__ == "__main__":
    unittest.main()
