"""The PyFuser subjects ported to PyKokkos's API (examples/pykokkos/, docs/pykokkos.md),
each run unfused and fused against a plain numpy implementation of the same
algorithm, at small sizes; and the translator's constructs they brought (a range's
step, a view's extent).

Tolerances: integers (Gaussian NB's predicted classes) must be equal. Floats are
compared with rtol 1e-12, except where numpy sums in another order than the kernel's
sequential loop (numpy's pairwise sums and BLAS products): covariance and Gaussian NB
at rtol 1e-10 (covariance with atol 1e-12, as centred data makes entries near 0), a
few hundred roundings of f64 each.
"""

import inspect
import os
import runpy
import unittest

import numpy as np

import stitch
import stitch.pykokkos as pk

SOURCE = os.environ.get("STITCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def example(name):
    return runpy.run_path(os.path.join(SOURCE, "examples", "pykokkos", name + ".py"), run_name="example")


# (example, sizes for run() and reference(), rtol, atol, kernels when fused: at most)
SUBJECTS = (
    ("adi", (24, 3), 1e-12, 0, None),
    ("covariance", (40, 30), 1e-10, 1e-12, None),
    ("fdtd_2d", (30, 40, 4), 1e-12, 0, 3 * 4),   # each statement's chain of temporaries, one kernel
    ("mvt", (70,), 1e-12, 0, 1),                 # both products and updates, one kernel
    ("syrk", (40, 30, "syrk"), 1e-12, 0, 1),     # the scale and the update of a row, one thread
    ("syrk", (40, 30, "syr2k"), 1e-12, 0, 1),
    ("gaussian_nb", (500, 8, 3), 1e-10, 0, None),
)


class Subjects(unittest.TestCase):
    def tearDown(self):
        pk.set_mode("fused")

    def test_fused_and_unfused_match_numpy(self):
        for name, sizes, rtol, atol, fused_at_most in SUBJECTS:
            program = example(name)
            want = program["reference"](*sizes)
            kernels = {}
            for mode in ("unfused", "fused"):
                pk.set_mode(mode)
                got = program["run"](*sizes)
                self.assertEqual(len(got), len(want))
                for g, w in zip(got, want):
                    if np.issubdtype(np.asarray(w).dtype, np.integer):
                        np.testing.assert_array_equal(g, w, err_msg=f"{name} {sizes}, {mode}")
                    else:
                        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{name} {sizes}, {mode}")
                kernels[mode] = pk._runtime().stats()["kernels"]
            with self.subTest(name=name, sizes=sizes):
                self.assertLessEqual(kernels["fused"], kernels["unfused"])
                if fused_at_most is not None:
                    self.assertLessEqual(kernels["fused"], fused_at_most)
                    self.assertLess(kernels["fused"], kernels["unfused"])


@pk.workunit
def steps(i: int, x: pk.View2D[pk.double], out: pk.View1D[pk.double]):
    s = 0.0
    for j in range(x.extent(1) - 1, -1, -2):
        s = s * 10.0 + x[i][j]
    for j in range(1, 8, 3):
        s += 0.5 * j
    for j in range(5, 2):
        s += 1000.0
    for j in range(3, 10, -1):
        s += 1000.0
    out[i] = s


@pk.workunit
def variable_step(i: int, k: int, out: pk.View1D[pk.double]):
    for j in range(0, 4, k):
        out[i] += 1.0


@pk.workunit
def extent_of_variable_axis(i: int, k: int, x: pk.View2D[pk.double]):
    x[i][0] = x.extent(k)


class TranslatorConstructs(unittest.TestCase):
    def test_range_steps_and_extent(self):
        x = pk.View([3, 5], pk.double)
        x[:] = np.arange(15.0).reshape(3, 5) % 4
        out = pk.View([3], pk.double)
        pk.parallel_for(3, steps, x=x, out=out)
        want = []
        for row in np.arange(15.0).reshape(3, 5) % 4:
            s = 0.0
            for j in range(4, -1, -2):
                s = s * 10.0 + row[j]
            want.append(s + 0.5 * (1 + 4 + 7))
        np.testing.assert_array_equal(np.asarray(out), want)

    def test_unsupported_step_and_extent_name_the_construct_and_line(self):
        out = pk.View([2], pk.double)
        with self.assertRaises(stitch.Error) as e:
            pk.parallel_for(2, variable_step, k=2, out=out)
        line = inspect.getsourcelines(variable_step.fn)[1] + 2
        self.assertIn(f"test_pykokkos_subjects.py:{line}:", str(e.exception))
        self.assertIn("a range step other than a nonzero integer constant", str(e.exception))
        x = pk.View([2, 2], pk.double)
        with self.assertRaises(stitch.Error) as e:
            pk.parallel_for(2, extent_of_variable_axis, k=1, x=x)
        line = inspect.getsourcelines(extent_of_variable_axis.fn)[1] + 2
        self.assertIn(f"test_pykokkos_subjects.py:{line}:", str(e.exception))
        self.assertIn("'x.extent(k)'", str(e.exception))


if __name__ == "__main__":
    unittest.main()
