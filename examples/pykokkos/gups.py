"""GUPS (random access) written against PyKokkos's API (docs/pykokkos.md): each iteration
advances a stream of pseudo-random numbers, then xors them into a table at positions
that depend on the index and the iteration. Integer arithmetic wraps at 64 bits, as
numpy's int64 does. The positions of one update never repeat (the table's size is a
power of two and 40503 is odd), so the result does not depend on the order.

    .venv/bin/python examples/pykokkos/gups.py [table] [stream] [iterations] [mode]
"""

import sys

import numpy as np

import stitch.pykokkos as pk


@pk.workunit
def advance(i: int, ran: pk.View1D[pk.int64]):
    ran[i] = ran[i] * 6364136223846793005 + 1442695040888963407


@pk.workunit
def update(i: int, k: int, n: int, ran: pk.View1D[pk.int64], table: pk.View1D[pk.int64]):
    j = (i * 40503 + k * 2654435761) & (n - 1)
    table[j] ^= ran[i]


def run(n, m, iterations):
    ran = pk.View([m], pk.int64)
    table = pk.View([n], pk.int64)
    ran[:] = np.arange(m, dtype=np.int64) * 7 + 1
    table[:] = np.arange(n, dtype=np.int64)
    for k in range(iterations):
        pk.parallel_for(m, advance, ran=ran)
        pk.parallel_for(m, update, k=k, n=n, ran=ran, table=table)
    return np.asarray(ran), np.asarray(table)


def reference(n, m, iterations):
    ran = np.arange(m, dtype=np.int64) * 7 + 1
    table = np.arange(n, dtype=np.int64)
    i = np.arange(m, dtype=np.int64)
    with np.errstate(over="ignore"):
        for k in range(iterations):
            ran = ran * np.int64(6364136223846793005) + np.int64(1442695040888963407)
            j = (i * 40503 + np.int64(k) * 2654435761) & (n - 1)
            table[j] ^= ran
    return ran, table


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 22
    m = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20
    iterations = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    pk.set_mode(sys.argv[4] if len(sys.argv) > 4 else "fused")
    timer = pk.Timer()
    got = run(n, m, iterations)
    seconds = timer.seconds()
    for g, w in zip(got, reference(n, m, iterations)):
        np.testing.assert_array_equal(g, w)
    print(f"gups table={n} stream={m} iterations={iterations}: {seconds * 1e3:.1f} ms (compiles included), "
          f"{pk._runtime().stats()['kernels']} kernels, matches numpy")


if __name__ == "__main__":
    main()
