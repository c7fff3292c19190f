"""NPBench's fdtd_2d written against PyKokkos's API (docs/pykokkos.md), as
bench/pyfuser/subjects.stitch has it: NumPy's whole-array statements, each NumPy
operation one workunit writing a new temporary view, so each time step makes 12
calls. Where NumPy slices rows or columns (`hz[1:, :] - hz[:-1, :]`), the workunit
reads at an index offset (`x[i + 1][j] - x[i][j]`); PyKokkos has no slicing here.
Fused, each statement's chain of temporaries runs as one kernel.

    .venv/bin/python examples/pykokkos/fdtd_2d.py [nx] [ny] [steps] [mode]
"""

import sys

import numpy as np

import stitch.pykokkos as pk


@pk.workunit
def set_first_row(j: int, t: int, fict: pk.View1D[pk.double], ey: pk.View2D[pk.double]):
    ey[0][j] = fict[t]


@pk.workunit
def diff_rows(i: int, j: int, x: pk.View2D[pk.double], z: pk.View2D[pk.double]):
    z[i][j] = x[i + 1][j] - x[i][j]


@pk.workunit
def diff_columns(i: int, j: int, x: pk.View2D[pk.double], z: pk.View2D[pk.double]):
    z[i][j] = x[i][j + 1] - x[i][j]


@pk.workunit
def scale(i: int, j: int, s: float, x: pk.View2D[pk.double], z: pk.View2D[pk.double]):
    z[i][j] = s * x[i][j]


@pk.workunit
def add_next_row(i: int, j: int, x: pk.View2D[pk.double], y: pk.View2D[pk.double], z: pk.View2D[pk.double]):
    z[i][j] = x[i][j] + y[i + 1][j]


@pk.workunit
def subtract(i: int, j: int, x: pk.View2D[pk.double], y: pk.View2D[pk.double], z: pk.View2D[pk.double]):
    z[i][j] = x[i][j] - y[i][j]


@pk.workunit
def subtract_in_place(i: int, j: int, x: pk.View2D[pk.double], y: pk.View2D[pk.double]):
    x[i][j] -= y[i][j]


@pk.workunit
def subtract_from_next_row(i: int, j: int, x: pk.View2D[pk.double], y: pk.View2D[pk.double]):
    x[i + 1][j] -= y[i][j]


@pk.workunit
def subtract_from_next_column(i: int, j: int, x: pk.View2D[pk.double], y: pk.View2D[pk.double]):
    x[i][j + 1] -= y[i][j]


def inputs(nx, ny, steps):
    rng = np.random.default_rng(3)
    return rng.random((nx, ny)), rng.random((nx, ny)), rng.random((nx, ny)), rng.random(steps)


def setup(nx, ny, steps):
    arrays = inputs(nx, ny, steps)
    views = [pk.View(list(a.shape), pk.double) for a in arrays]
    for view, array in zip(views, arrays):
        view[:] = array
    return views


def program(ex, ey, hz, fict):
    nx, ny = ex.shape

    def over(rows, columns):
        return pk.MDRangePolicy([0, 0], [rows, columns])

    def temporary(rows, columns):
        return pk.View([rows, columns], pk.double)

    for t in range(fict.shape[0]):
        pk.parallel_for(ny, set_first_row, t=t, fict=fict, ey=ey)
        # ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        t1 = temporary(nx - 1, ny)
        pk.parallel_for(over(nx - 1, ny), diff_rows, x=hz, z=t1)
        t2 = temporary(nx - 1, ny)
        pk.parallel_for(over(nx - 1, ny), scale, s=0.5, x=t1, z=t2)
        pk.parallel_for(over(nx - 1, ny), subtract_from_next_row, x=ey, y=t2)
        # ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        t1 = temporary(nx, ny - 1)
        pk.parallel_for(over(nx, ny - 1), diff_columns, x=hz, z=t1)
        t2 = temporary(nx, ny - 1)
        pk.parallel_for(over(nx, ny - 1), scale, s=0.5, x=t1, z=t2)
        pk.parallel_for(over(nx, ny - 1), subtract_from_next_column, x=ex, y=t2)
        # hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
        t1 = temporary(nx - 1, ny - 1)
        pk.parallel_for(over(nx - 1, ny - 1), diff_columns, x=ex, z=t1)
        t2 = temporary(nx - 1, ny - 1)
        pk.parallel_for(over(nx - 1, ny - 1), add_next_row, x=t1, y=ey, z=t2)
        t3 = temporary(nx - 1, ny - 1)
        pk.parallel_for(over(nx - 1, ny - 1), subtract, x=t2, y=ey, z=t3)
        t4 = temporary(nx - 1, ny - 1)
        pk.parallel_for(over(nx - 1, ny - 1), scale, s=0.7, x=t3, z=t4)
        pk.parallel_for(over(nx - 1, ny - 1), subtract_in_place, x=hz, y=t4)
    pk.fence()  # runs every pending call together; reading one view runs only what it depends on
    return np.asarray(ex), np.asarray(ey), np.asarray(hz)


def numpy_program(ex, ey, hz, fict):
    for t in range(fict.shape[0]):
        ey[0, :] = fict[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
    return ex, ey, hz


def run(nx, ny, steps):
    return program(*setup(nx, ny, steps))


def reference(nx, ny, steps):
    return numpy_program(*inputs(nx, ny, steps))


def main():
    nx = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    ny = int(sys.argv[2]) if len(sys.argv) > 2 else 1200
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    pk.set_mode(sys.argv[4] if len(sys.argv) > 4 else "fused")
    timer = pk.Timer()
    got = run(nx, ny, steps)
    seconds = timer.seconds()
    for g, w in zip(got, reference(nx, ny, steps)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    print(f"fdtd_2d {nx}x{ny} steps={steps}: {seconds * 1e3:.1f} ms (compiles included), "
          f"{pk._runtime().stats()['kernels']} kernels, matches numpy")


if __name__ == "__main__":
    main()
