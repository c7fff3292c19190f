"""NPBench's syrk and syr2k (the lower triangle of C = alpha A A^T + beta C, and of
C = alpha (A B^T + B A^T) + beta C) written against PyKokkos's API (docs/pykokkos.md),
as bench/pyfuser/subjects.stitch has them: the lower triangle scaled by beta, then the
rank-k update, one row of C per thread. Fused, the scale and the update of a row run
in one thread, one kernel.

    .venv/bin/python examples/pykokkos/syrk.py [n] [m] [syrk|syr2k] [mode]
"""

import sys

import numpy as np

import stitch.pykokkos as pk

ALPHA, BETA = 1.5, 1.2


@pk.workunit
def scale_lower(i: int, beta: float, c: pk.View2D[pk.double]):
    for j in range(i + 1):
        c[i][j] *= beta


@pk.workunit
def syrk_update(i: int, alpha: float, c: pk.View2D[pk.double], a: pk.View2D[pk.double]):
    for k in range(a.extent(1)):
        for j in range(i + 1):
            c[i][j] += alpha * a[i][k] * a[j][k]


@pk.workunit
def syr2k_update(i: int, alpha: float, c: pk.View2D[pk.double], a: pk.View2D[pk.double], b: pk.View2D[pk.double]):
    for k in range(a.extent(1)):
        for j in range(i + 1):
            c[i][j] += a[j][k] * alpha * b[i][k] + b[j][k] * alpha * a[i][k]


def inputs(n, m, which="syrk"):
    rng = np.random.default_rng(12)
    arrays = [rng.random((n, n)), rng.random((n, m))]
    if which == "syr2k":
        arrays.append(rng.random((n, m)))
    return arrays


def setup(n, m, which="syrk"):
    arrays = inputs(n, m, which)
    views = [pk.View(list(a.shape), pk.double) for a in arrays]
    for view, array in zip(views, arrays):
        view[:] = array
    return views


def program(c, a, b=None):
    n = c.shape[0]
    pk.parallel_for("C *= beta", n, scale_lower, beta=BETA, c=c)
    if b is None:
        pk.parallel_for("syrk", n, syrk_update, alpha=ALPHA, c=c, a=a)
    else:
        pk.parallel_for("syr2k", n, syr2k_update, alpha=ALPHA, c=c, a=a, b=b)
    return (np.asarray(c),)


def numpy_program(c, a, b=None):
    """Row by row, as NPBench's NumPy version, with its loop over k a matrix-vector product."""
    for i in range(c.shape[0]):
        c[i, :i + 1] *= BETA
        if b is None:
            c[i, :i + 1] += ALPHA * (a[:i + 1] @ a[i])
        else:
            c[i, :i + 1] += ALPHA * (a[:i + 1] @ b[i]) + ALPHA * (b[:i + 1] @ a[i])
    return (c,)


def run(n, m, which="syrk"):
    return program(*setup(n, m, which))


def reference(n, m, which="syrk"):
    return numpy_program(*inputs(n, m, which))


def main():
    which = sys.argv[3] if len(sys.argv) > 3 else "syrk"
    n = int(sys.argv[1]) if len(sys.argv) > 1 else (600 if which == "syrk" else 500)
    m = int(sys.argv[2]) if len(sys.argv) > 2 else (500 if which == "syrk" else 400)
    pk.set_mode(sys.argv[4] if len(sys.argv) > 4 else "fused")
    timer = pk.Timer()
    got = run(n, m, which)
    seconds = timer.seconds()
    for g, w in zip(got, reference(n, m, which)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    print(f"{which} C={n}x{n} A={n}x{m}: {seconds * 1e3:.1f} ms (compiles included), "
          f"{pk._runtime().stats()['kernels']} kernels, matches numpy")


if __name__ == "__main__":
    main()
