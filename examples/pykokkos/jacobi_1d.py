"""NPBench's jacobi_1d written against PyKokkos's API (docs/pykokkos.md): two stencils per
time step, over the interior, from an offset range (RangePolicy(space, 1, n - 1)).

    .venv/bin/python examples/pykokkos/jacobi_1d.py [n] [steps] [mode]
"""

import sys

import numpy as np

import stitch.pykokkos as pk


@pk.workunit
def stencil(i: int, a: pk.View1D[pk.double], b: pk.View1D[pk.double]):
    b[i] = 0.33333 * (a[i - 1] + a[i] + a[i + 1])


def run(n, steps):
    a, b = pk.View([n], pk.double), pk.View([n], pk.double)
    a[:] = np.arange(n, dtype=np.float64) % 7 + 2.0
    b[:] = np.arange(n, dtype=np.float64) % 5 + 3.0
    interior = pk.RangePolicy(pk.ExecutionSpace.OpenMP, 1, n - 1)
    for _ in range(steps):
        pk.parallel_for(interior, stencil, a=a, b=b)
        pk.parallel_for(interior, stencil, a=b, b=a)
    return np.asarray(a), np.asarray(b)


def reference(n, steps):
    a = np.arange(n, dtype=np.float64) % 7 + 2.0
    b = np.arange(n, dtype=np.float64) % 5 + 3.0
    for _ in range(steps):
        b[1:-1] = 0.33333 * (a[:-2] + a[1:-1] + a[2:])
        a[1:-1] = 0.33333 * (b[:-2] + b[1:-1] + b[2:])
    return a, b


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 20
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    pk.set_mode(sys.argv[3] if len(sys.argv) > 3 else "fused")
    timer = pk.Timer()
    got = run(n, steps)
    seconds = timer.seconds()
    for g, w in zip(got, reference(n, steps)):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    print(f"jacobi_1d n={n} steps={steps}: {seconds * 1e3:.1f} ms (compiles included), matches numpy")


if __name__ == "__main__":
    main()
