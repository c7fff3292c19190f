"""BabelStream (copy, mul, add, triad, dot) written against PyKokkos's API, run on Stitch
through `import stitch.pykokkos as pk` (docs/pykokkos.md). PyFuser's subject: each
iteration's four parallel_fors and its dot fuse into one kernel.

    .venv/bin/python examples/pykokkos/babelstream.py [n] [iterations] [mode]
"""

import sys

import numpy as np

import stitch.pykokkos as pk


@pk.workunit
def copy(i: int, a: pk.View1D[pk.double], c: pk.View1D[pk.double]):
    c[i] = a[i]


@pk.workunit
def mul(i: int, scalar: float, b: pk.View1D[pk.double], c: pk.View1D[pk.double]):
    b[i] = scalar * c[i]


@pk.workunit
def add(i: int, a: pk.View1D[pk.double], b: pk.View1D[pk.double], c: pk.View1D[pk.double]):
    c[i] = a[i] + b[i]


@pk.workunit
def triad(i: int, scalar: float, a: pk.View1D[pk.double], b: pk.View1D[pk.double], c: pk.View1D[pk.double]):
    a[i] = b[i] + scalar * c[i]


@pk.workunit
def dot(i: int, acc: pk.Acc[pk.double], a: pk.View1D[pk.double], b: pk.View1D[pk.double]):
    acc += a[i] * b[i]


def run(n, iterations):
    a, b, c = pk.View([n], pk.double), pk.View([n], pk.double), pk.View([n], pk.double)
    a.fill(0.1)
    b.fill(0.2)
    sums = []
    for _ in range(iterations):
        pk.parallel_for(n, copy, a=a, c=c)
        pk.parallel_for(n, mul, scalar=0.4, b=b, c=c)
        pk.parallel_for(n, add, a=a, b=b, c=c)
        pk.parallel_for(n, triad, scalar=0.4, a=a, b=b, c=c)
        sums.append(pk.parallel_reduce(n, dot, a=a, b=b))
    return np.asarray(a), np.asarray(b), np.asarray(c), sums


def reference(n, iterations):
    a, b, c = np.full(n, 0.1), np.full(n, 0.2), np.zeros(n)
    sums = []
    for _ in range(iterations):
        c = a.copy()
        b = 0.4 * c
        c = a + b
        a = b + 0.4 * c
        sums.append(float(np.dot(a, b)))
    return a, b, c, sums


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 22
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    pk.set_mode(sys.argv[3] if len(sys.argv) > 3 else "fused")
    timer = pk.Timer()
    got = run(n, iterations)
    seconds = timer.seconds()
    want = reference(n, iterations)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    print(f"babelstream n={n} iterations={iterations}: {seconds * 1e3:.1f} ms (compiles included), matches numpy")


if __name__ == "__main__":
    main()
