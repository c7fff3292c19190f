"""NPBench's mvt written against PyKokkos's API (docs/pykokkos.md), as
bench/pyfuser/subjects.stitch has it: x1 += A @ y_1 and x2 += y_2 @ A, each product
one workunit (a row or column of A per thread) into a temporary view, then the update.
Fused, the products and updates run as one kernel.

    .venv/bin/python examples/pykokkos/mvt.py [n] [mode]
"""

import sys

import numpy as np

import stitch.pykokkos as pk


@pk.workunit
def matvec(i: int, a: pk.View2D[pk.double], y: pk.View1D[pk.double], z: pk.View1D[pk.double]):
    s = 0.0
    for j in range(a.extent(1)):
        s += a[i][j] * y[j]
    z[i] = s


@pk.workunit
def vecmat(i: int, y: pk.View1D[pk.double], a: pk.View2D[pk.double], z: pk.View1D[pk.double]):
    s = 0.0
    for j in range(a.extent(0)):
        s += y[j] * a[j][i]
    z[i] = s


@pk.workunit
def add_in_place(i: int, x: pk.View1D[pk.double], y: pk.View1D[pk.double]):
    x[i] += y[i]


def inputs(n):
    rng = np.random.default_rng(7)
    return rng.random(n), rng.random(n), rng.random(n), rng.random(n), rng.random((n, n))


def setup(n):
    arrays = inputs(n)
    views = [pk.View(list(a.shape), pk.double) for a in arrays]
    for view, array in zip(views, arrays):
        view[:] = array
    return views


def program(x1, x2, y_1, y_2, a):
    n = x1.shape[0]
    t = pk.View([n], pk.double)
    pk.parallel_for("A @ y_1", n, matvec, a=a, y=y_1, z=t)
    pk.parallel_for("x1 +=", n, add_in_place, x=x1, y=t)
    t = pk.View([n], pk.double)
    pk.parallel_for("y_2 @ A", n, vecmat, y=y_2, a=a, z=t)
    pk.parallel_for("x2 +=", n, add_in_place, x=x2, y=t)
    pk.fence()  # runs every pending call together; reading one view runs only what it depends on
    return np.asarray(x1), np.asarray(x2)


def numpy_program(x1, x2, y_1, y_2, a):
    x1 += a @ y_1
    x2 += y_2 @ a
    return x1, x2


def run(n):
    return program(*setup(n))


def reference(n):
    return numpy_program(*inputs(n))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    pk.set_mode(sys.argv[2] if len(sys.argv) > 2 else "fused")
    timer = pk.Timer()
    got = run(n)
    seconds = timer.seconds()
    for g, w in zip(got, reference(n)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    print(f"mvt n={n}: {seconds * 1e3:.1f} ms (compiles included), "
          f"{pk._runtime().stats()['kernels']} kernels, matches numpy")


if __name__ == "__main__":
    main()
