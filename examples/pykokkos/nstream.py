"""ParRes NSTREAM and Transpose written against PyKokkos's API (docs/pykokkos.md):
NSTREAM's repeated a += b + s * c on one range, and Transpose's b[j][i] += a[i][j]; a[i][j] += 1
on a two-dimensional MDRangePolicy. The repeated calls of each fuse into one kernel.

    .venv/bin/python examples/pykokkos/nstream.py [n] [iterations] [mode]
"""

import sys

import numpy as np

import stitch.pykokkos as pk


@pk.workunit
def nstream(i: int, scalar: float, a: pk.View1D[pk.double], b: pk.View1D[pk.double], c: pk.View1D[pk.double]):
    a[i] += b[i] + scalar * c[i]


@pk.workunit
def transpose(i: int, j: int, a: pk.View2D[pk.double], b: pk.View2D[pk.double]):
    b[j][i] += a[i][j]
    a[i][j] += 1.0


def run(n, iterations):
    a, b, c = pk.View([n], pk.double), pk.View([n], pk.double), pk.View([n], pk.double)
    b.fill(2.0)
    c.fill(2.0)
    for _ in range(iterations):
        pk.parallel_for(n, nstream, scalar=3.0, a=a, b=b, c=c)
    side = int(n ** 0.5)
    ta, tb = pk.View([side, side], pk.double), pk.View([side, side], pk.double)
    ta[:] = np.arange(side * side, dtype=np.float64).reshape(side, side)
    for _ in range(iterations):
        pk.parallel_for(pk.MDRangePolicy([0, 0], [side, side]), transpose, a=ta, b=tb)
    return np.asarray(a), np.asarray(ta), np.asarray(tb)


def reference(n, iterations):
    a, b, c = np.zeros(n), np.full(n, 2.0), np.full(n, 2.0)
    for _ in range(iterations):
        a += b + 3.0 * c
    side = int(n ** 0.5)
    ta = np.arange(side * side, dtype=np.float64).reshape(side, side)
    tb = np.zeros((side, side))
    for _ in range(iterations):
        tb += ta.T
        ta += 1.0
    return a, ta, tb


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 22
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    pk.set_mode(sys.argv[3] if len(sys.argv) > 3 else "fused")
    timer = pk.Timer()
    got = run(n, iterations)
    seconds = timer.seconds()
    for g, w in zip(got, reference(n, iterations)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    print(f"nstream and transpose n={n} iterations={iterations}: {seconds * 1e3:.1f} ms (compiles included), "
          f"{pk._runtime().stats()['kernels']} kernels, matches numpy")


if __name__ == "__main__":
    main()
