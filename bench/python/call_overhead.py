"""What recording one lazy call costs from Python (docs/python.md, docs/pykokkos.md):
batches of 1,000 `rt.call(k, 3.0, a, b, c)`, then of 1,000
`pk.parallel_for(64, nstream, s=3.0, a=a, b=b, c=c)`, on small arrays in unfused
runtimes, each batch then flushed (not timed); the median batch's time per call. Run
with the environment `scripts/setup.sh --python` makes:

    .venv/bin/python bench/python/call_overhead.py
"""

import time

import numpy as np

import stitch
import stitch.pykokkos as pk

KERNEL = """
kernel nstream(s: f64, a: f64[n], b: f64[n], c: f64[n]) over i < n {
  a[i] += b[i] + s * c[i]
}
"""


def main():
    k = stitch.parse(KERNEL, "nstream.stitch").kernels["nstream"]
    rt = stitch.LazyRuntime(mode="unfused")
    a, b, c = rt.array(np.zeros(64)), rt.array(np.ones(64)), rt.array(np.ones(64))
    rt.flush()
    per_call = []
    for _ in range(21):
        start = time.perf_counter()
        for _ in range(1000):
            rt.call(k, 3.0, a, b, c)
        per_call.append((time.perf_counter() - start) / 1000)
        rt.flush()
    per_call.sort()
    print(f"rt.call from Python: {per_call[len(per_call) // 2] * 1e6:.2f} us per call "
          f"(median of 21 batches of 1,000; C++ recording inside it: "
          f"{rt.stats()['record_seconds'] / rt.stats()['calls'] * 1e6:.2f} us)")


@pk.workunit
def nstream(i: int, s: float, a: pk.View1D[pk.double], b: pk.View1D[pk.double], c: pk.View1D[pk.double]):
    a[i] += b[i] + s * c[i]


def median_per_call(batch):
    per_call = []
    for _ in range(21):
        start = time.perf_counter()
        batch()
        per_call.append((time.perf_counter() - start) / 1000)
        pk.fence()
    per_call.sort()
    return per_call[len(per_call) // 2]


def pykokkos():
    pk.set_mode("unfused")
    a, b, c = pk.View([64]), pk.View([64]), pk.View([64])

    def batch():
        for _ in range(1000):
            pk.parallel_for(64, nstream, s=3.0, a=a, b=b, c=c)

    batch()
    print(f"pk.parallel_for: {median_per_call(batch) * 1e6:.2f} us per call (median of 21 batches of 1,000)")


if __name__ == "__main__":
    main()
    pykokkos()
