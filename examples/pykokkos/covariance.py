"""NPBench's covariance written against PyKokkos's API (docs/pykokkos.md), as
bench/pyfuser/subjects.stitch has it: the column means, the data centred in place (an
MDRangePolicy), then the upper triangle of the covariance matrix, one row per thread,
mirrored into the lower. Each step reads all of what the one before wrote along a
column, so the three do not fuse.

    .venv/bin/python examples/pykokkos/covariance.py [rows] [columns] [mode]
"""

import sys

import numpy as np

import stitch.pykokkos as pk


@pk.workunit
def column_mean(j: int, float_n: float, data: pk.View2D[pk.double], mean: pk.View1D[pk.double]):
    s = 0.0
    for i in range(data.extent(0)):
        s += data[i][j]
    mean[j] = s / float_n


@pk.workunit
def center(i: int, j: int, data: pk.View2D[pk.double], mean: pk.View1D[pk.double]):
    data[i][j] -= mean[j]


@pk.workunit
def covariance(i: int, float_n: float, data: pk.View2D[pk.double], cov: pk.View2D[pk.double]):
    for j in range(i, data.extent(1)):
        s = 0.0
        for k in range(data.extent(0)):
            s += data[k][i] * data[k][j]
        cov[i][j] = s / (float_n - 1.0)
        cov[j][i] = s / (float_n - 1.0)


def inputs(n, m):
    return np.random.default_rng(17).random((n, m)), np.zeros(m), np.zeros((m, m))


def setup(n, m):
    data, mean, cov = inputs(n, m)
    views = pk.View([n, m], pk.double), pk.View([m], pk.double), pk.View([m, m], pk.double)
    views[0][:] = data
    return views


def program(data, mean, cov):
    n, m = data.shape
    pk.parallel_for("mean", m, column_mean, float_n=float(n), data=data, mean=mean)
    pk.parallel_for("center", pk.MDRangePolicy([0, 0], [n, m]), center, data=data, mean=mean)
    pk.parallel_for("covariance", m, covariance, float_n=float(n), data=data, cov=cov)
    pk.fence()  # runs every pending call together; reading one view runs only what it depends on
    return np.asarray(cov), np.asarray(data)


def numpy_program(data, mean, cov):
    n, m = data.shape
    mean[:] = np.mean(data, axis=0)
    data -= mean
    for i in range(m):
        cov[i, i:] = cov[i:, i] = data[:, i] @ data[:, i:] / (n - 1.0)
    return cov, data


def run(n, m):
    return program(*setup(n, m))


def reference(n, m):
    return numpy_program(*inputs(n, m))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    m = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    pk.set_mode(sys.argv[3] if len(sys.argv) > 3 else "fused")
    timer = pk.Timer()
    got = run(n, m)
    seconds = timer.seconds()
    for g, w in zip(got, reference(n, m)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    print(f"covariance data={n}x{m}: {seconds * 1e3:.1f} ms (compiles included), "
          f"{pk._runtime().stats()['kernels']} kernels, matches numpy")


if __name__ == "__main__":
    main()
