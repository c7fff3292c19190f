"""NPBench's adi (alternating direction implicit) written against PyKokkos's API
(docs/pykokkos.md), as bench/pyfuser/subjects.stitch has it: each time step a column
sweep, then a row sweep, each one workunit over the interior rows (a RangePolicy from 1)
whose thread runs a forward and a backward substitution along its line. The sweeps
read what the other wrote in neighbouring lines, so they do not fuse.

    .venv/bin/python examples/pykokkos/adi.py [n] [steps] [mode]
"""

import sys

import numpy as np

import stitch.pykokkos as pk


@pk.workunit
def column_sweep(i: int, a: float, b: float, c: float, d: float, f: float, u: pk.View2D[pk.double],
                 v: pk.View2D[pk.double], p: pk.View2D[pk.double], q: pk.View2D[pk.double]):
    n = u.extent(0)
    v[0][i] = 1.0
    p[i][0] = 0.0
    q[i][0] = v[0][i]
    for j in range(1, n - 1):
        p[i][j] = -c / (a * p[i][j - 1] + b)
        q[i][j] = (-d * u[j][i - 1] + (1.0 + 2.0 * d) * u[j][i] - f * u[j][i + 1] - a * q[i][j - 1]) / (
            a * p[i][j - 1] + b)
    v[n - 1][i] = 1.0
    for j in range(n - 2, 0, -1):
        v[j][i] = p[i][j] * v[j + 1][i] + q[i][j]


@pk.workunit
def row_sweep(i: int, a: float, c: float, d: float, e: float, f: float, u: pk.View2D[pk.double],
              v: pk.View2D[pk.double], p: pk.View2D[pk.double], q: pk.View2D[pk.double]):
    n = u.extent(0)
    u[i][0] = 1.0
    p[i][0] = 0.0
    q[i][0] = u[i][0]
    for j in range(1, n - 1):
        p[i][j] = -f / (d * p[i][j - 1] + e)
        q[i][j] = (-a * v[i - 1][j] + (1.0 + 2.0 * a) * v[i][j] - c * v[i + 1][j] - d * q[i][j - 1]) / (
            d * p[i][j - 1] + e)
    u[i][n - 1] = 1.0
    for j in range(n - 2, 0, -1):
        u[i][j] = p[i][j] * u[i][j + 1] + q[i][j]


def coefficients(n, steps):
    """NPBench's: a, b, c for the column sweep, d, e, f for the row sweep."""
    dx = dy = 1.0 / n
    dt = 1.0 / steps
    mul1, mul2 = 2.0 * dt / (dx * dx), 1.0 * dt / (dy * dy)
    a, d = -mul1 / 2.0, -mul2 / 2.0
    return a, 1.0 + mul1, a, d, 1.0 + mul2, d


def inputs(n, steps):
    i, j = np.indices((n, n), dtype=np.float64)
    return ((i + n - j) / n, np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))), steps


def setup(n, steps):
    arrays, steps = inputs(n, steps)
    views = [pk.View([n, n], pk.double) for _ in arrays]
    for view, array in zip(views, arrays):
        view[:] = array
    return views, steps


def program(views, steps):
    u, v, p, q = views
    n = u.shape[0]
    a, b, c, d, e, f = coefficients(n, steps)
    interior = pk.RangePolicy(pk.ExecutionSpace.OpenMP, 1, n - 1)
    for _ in range(steps):
        pk.parallel_for("column_sweep", interior, column_sweep, a=a, b=b, c=c, d=d, f=f, u=u, v=v, p=p, q=q)
        pk.parallel_for("row_sweep", interior, row_sweep, a=a, c=c, d=d, e=e, f=f, u=u, v=v, p=p, q=q)
    pk.fence()  # runs every pending call together; reading one view runs only what it depends on
    return np.asarray(u), np.asarray(v)


def numpy_program(arrays, steps):
    """The same sweeps with each line's substitution vectorised over the interior lines."""
    u, v, p, q = arrays
    n = u.shape[0]
    a, b, c, d, e, f = coefficients(n, steps)
    inner = slice(1, n - 1)
    for _ in range(steps):
        v[0, inner] = 1.0
        p[inner, 0] = 0.0
        q[inner, 0] = v[0, inner]
        for j in range(1, n - 1):
            p[inner, j] = -c / (a * p[inner, j - 1] + b)
            q[inner, j] = (-d * u[j, :n - 2] + (1.0 + 2.0 * d) * u[j, inner] - f * u[j, 2:] - a * q[inner, j - 1]) / (
                a * p[inner, j - 1] + b)
        v[n - 1, inner] = 1.0
        for j in range(n - 2, 0, -1):
            v[j, inner] = p[inner, j] * v[j + 1, inner] + q[inner, j]
        u[inner, 0] = 1.0
        p[inner, 0] = 0.0
        q[inner, 0] = u[inner, 0]
        for j in range(1, n - 1):
            p[inner, j] = -f / (d * p[inner, j - 1] + e)
            q[inner, j] = (-a * v[:n - 2, j] + (1.0 + 2.0 * a) * v[inner, j] - c * v[2:, j] - d * q[inner, j - 1]) / (
                d * p[inner, j - 1] + e)
        u[inner, n - 1] = 1.0
        for j in range(n - 2, 0, -1):
            u[inner, j] = p[inner, j] * u[inner, j + 1] + q[inner, j]
    return u, v


def run(n, steps):
    return program(*setup(n, steps))


def reference(n, steps):
    return numpy_program(*inputs(n, steps))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    pk.set_mode(sys.argv[3] if len(sys.argv) > 3 else "fused")
    timer = pk.Timer()
    got = run(n, steps)
    seconds = timer.seconds()
    for g, w in zip(got, reference(n, steps)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    print(f"adi n={n} steps={steps}: {seconds * 1e3:.1f} ms (compiles included), "
          f"{pk._runtime().stats()['kernels']} kernels, matches numpy")


if __name__ == "__main__":
    main()
