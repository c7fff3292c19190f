"""The stitch Python package (docs/python.md): graphs compiled and run on numpy arrays
against numpy and the reference interpreter, lazy arrays fused against numpy, and bad
input raising stitch.Error with the command line's message."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import stitch

GRAPHS = """
graph layernorm(x: f32[N, 64], gamma: f32[64], beta: f32[64]) {
  y = layer_norm(x, gamma, beta, axes=[-1], eps=1e-5)
  return y
}

graph two(x: f64[N], y: f64[N]) {
  s = add(x, y)
  d = mul(s, x)
  return s, d
}
"""

KERNELS = """
kernel saxpy(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] = a * x[i] + y[i]
}
kernel scale(a: f32, x: f32[n], y: f32[n]) over i < n {
  y[i] = a * x[i]
}
kernel dot(x: f32[n], y: f32[n]) -> sum f64 over i < n {
  yield f64(x[i] * y[i])
}
kernel gather(idx: i64[n], x: f32[m], y: f32[n]) over i < n {
  y[i] = x[idx[i]]
}
"""


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cache = tempfile.mkdtemp(prefix="stitch-python-")
        cls.module = stitch.parse(GRAPHS, "graphs.stitch")
        cls.kernels = stitch.parse(KERNELS, "kernels.stitch").kernels

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cache, ignore_errors=True)

    def test_a_compiled_graph_matches_numpy_and_the_interpreter(self):
        g = self.module.graphs["layernorm"]
        self.assertEqual(g.name, "layernorm")
        self.assertEqual(g.params, ["x: f32[N, 64]", "gamma: f32[64]", "beta: f32[64]"])
        rng = np.random.default_rng(1)
        x = rng.standard_normal((100, 64)).astype(np.float32)
        gamma = rng.standard_normal(64).astype(np.float32)
        beta = rng.standard_normal(64).astype(np.float32)
        run = stitch.compile(g, backend="cpu", planner="stitch", cache_dir=self.cache)
        self.assertEqual(run.backend, "cpu")
        self.assertEqual(run.planner, "stitch")
        y = run(x, gamma, beta)
        self.assertEqual(y.dtype, np.float32)
        self.assertEqual(y.shape, (100, 64))
        mean = x.astype(np.float64).mean(axis=1, keepdims=True)
        var = x.astype(np.float64).var(axis=1, keepdims=True)
        want = (x - mean) / np.sqrt(var + 1e-5) * gamma + beta
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(y, stitch.interpret(g, x, gamma, beta), rtol=1e-5, atol=1e-5)
        # A strided (non-contiguous) input is copied into the layout the graph takes.
        xt = np.asfortranarray(x)
        np.testing.assert_array_equal(run(xt, gamma, beta), y)

    def test_several_outputs_and_planners(self):
        g = self.module.graphs["two"]
        x = np.linspace(0, 1, 1000)
        y = np.linspace(1, 2, 1000)
        fused = stitch.compile(g, planner="stitch", cache_dir=self.cache)
        unfused = stitch.compile(g, planner="none", cache_dir=self.cache)
        s, d = fused(x, y)
        np.testing.assert_array_equal(s, x + y)
        np.testing.assert_array_equal(d, (x + y) * x)
        s2, d2 = unfused(x, y)
        np.testing.assert_array_equal(d2, d)
        self.assertLess(fused.kernel_count, unfused.kernel_count)
        self.assertTrue(fused.plan.strip())  # the fusion groups, one line each

    def test_lazy_arrays_fuse_and_equal_numpy(self):
        k = self.kernels
        self.assertTrue(k["dot"].is_reduction)
        rt = stitch.LazyRuntime(mode="fused", backend="cpu", cache_dir=self.cache)
        xs = np.arange(1000, dtype=np.float32) / 7
        x = rt.array(xs)
        y = rt.zeros([1000], "f32")
        self.assertEqual(x.shape, (1000,))
        self.assertEqual(x.dtype, "f32")
        rt.call(k["scale"], 2.0, x, y)       # y = 2x
        rt.call(k["saxpy"], 0.5, y, x)       # x += y / 2
        d = rt.reduce(k["dot"], x, y)        # recorded, not run
        self.assertEqual(rt.stats()["kernels"], 0)
        value = d.value()
        self.assertEqual(rt.stats()["kernels"], 1)  # the three calls in one kernel
        want_y = (2 * xs).astype(np.float32)
        want_x = (xs + np.float32(0.5) * want_y).astype(np.float32)
        np.testing.assert_array_equal(y.numpy(), want_y)
        np.testing.assert_array_equal(np.asarray(x), want_x)
        self.assertAlmostEqual(value, float(np.dot(want_x.astype(np.float64), want_y.astype(np.float64))),
                               delta=1e-6 * value)
        self.assertAlmostEqual(float(d), value)
        # Views share storage; assign writes through them.
        head = x.slice(0, 10)
        head.assign(np.zeros(10, dtype=np.float32))
        self.assertEqual(float(x.numpy()[:10].sum()), 0.0)
        self.assertEqual(x.reshape([10, 100]).shape, (10, 100))

    def test_a_built_graph_matches_numpy_and_the_interpreter(self):
        b = stitch.GraphBuilder("rmsnorm")
        x = b.param("x", "f32", ["N", 32])
        w = b.param("w", np.float32, [32])
        self.assertEqual(x.shape, ("N", 32))
        self.assertEqual(x.dtype, "f32")
        ms = b.op("reduce_mean", b.op("mul", x, x), axes=[1], keepdims=True)
        y = b.op("mul", b.op("mul", x, b.op("rsqrt", b.op("add", ms, 1e-6))), w, name="y")
        h = b.op("cast", y, to="f64")
        self.assertEqual((y.name, h.dtype), ("y", "f64"))
        b.output(y)
        b.output(h, "h")
        g = b.finish()
        self.assertEqual(g.params, ["x: f32[N, 32]", "w: f32[32]"])
        rng = np.random.default_rng(3)
        xs = rng.standard_normal((50, 32)).astype(np.float32)
        ws = rng.standard_normal(32).astype(np.float32)
        run = stitch.compile(g, cache_dir=self.cache)
        got, got64 = run(xs, ws)
        want = xs / np.sqrt((xs.astype(np.float64) ** 2).mean(axis=1, keepdims=True) + 1e-6) * ws
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(got64, got.astype(np.float64))
        np.testing.assert_allclose(got, stitch.interpret(g, xs, ws)[0], rtol=1e-6, atol=1e-6)
        self.assertIn("reduce_mean", str(g))
        # Each op is checked as it is added; a spent builder says so.
        b2 = stitch.GraphBuilder()
        v = b2.param("v", "f32", [4])
        for bad in (lambda: b2.op("nosuchop", v), lambda: b2.op("reduce_sum", v, axes=[3]),
                    lambda: b2.op("add", v, b2.param("u", "f32", [5])), lambda: b2.op("add", v, x),
                    lambda: b2.op("add", v, "one"), lambda: b2.param("t", "complex", [2]),
                    lambda: b2.op("reduce_sum", v, axes={1: 2})):
            with self.assertRaises(stitch.Error):
                bad()
        with self.assertRaises(stitch.Error):
            b.op("neg", x)

    def test_compiled_graphs_run_on_the_callers_memory(self):
        g = self.module.graphs["two"]
        run = stitch.compile(g, cache_dir=self.cache)
        x = np.linspace(0, 1, 257)
        y = np.linspace(1, 2, 257)
        s_out, d_out = np.empty_like(x), np.empty_like(x)
        s, d = run(x, y, out=[s_out, d_out])
        self.assertIs(s, s_out)
        self.assertIs(d, d_out)
        np.testing.assert_array_equal(s_out, x + y)
        np.testing.assert_array_equal(d_out, (x + y) * x)

        # Anything with __dlpack__ in CPU memory is read in place.
        class Exported:
            def __init__(self, a):
                self.a = a

            def __dlpack__(self, stream=None):
                return self.a.__dlpack__()

            def __dlpack_device__(self):
                return self.a.__dlpack_device__()

        s2, _ = run(Exported(x), Exported(y))
        np.testing.assert_array_equal(s2, x + y)
        # A strided view is copied into the layout the graph takes.
        wide = np.stack([x, y], axis=1)
        s3, _ = run(wide[:, 0], wide[:, 1])
        np.testing.assert_array_equal(s3, x + y)
        for bad_out in ([s_out], [s_out, np.empty(256)], [s_out, np.empty_like(x, dtype=np.float32)],
                        [s_out, x], [s_out, np.empty((257, 2))[:, 0]]):
            with self.assertRaises(stitch.Error):
                run(x, y, out=bad_out)
        with self.assertRaises(stitch.Error):
            run(object(), y)

    def test_a_lazy_arrays_memory_is_shared_with_numpy(self):
        rt = stitch.LazyRuntime(cache_dir=self.cache)
        x = rt.zeros([100], "f32")
        y = rt.zeros([100], "f32")
        mem = np.asarray(x)  # no copy: the array's own storage
        self.assertFalse(mem.flags.owndata)
        mem[:] = np.arange(100)  # seen by the calls that run after it
        rt.call(self.kernels["scale"], 3.0, x, y)
        ys = np.asarray(y)
        np.testing.assert_array_equal(ys, 3 * np.arange(100, dtype=np.float32))
        # A call recorded later writes the memory when it runs; read it again then.
        rt.call(self.kernels["saxpy"], 1.0, x, y)
        np.testing.assert_array_equal(np.asarray(y), 4 * np.arange(100, dtype=np.float32))
        self.assertTrue(np.shares_memory(ys, np.asarray(y)))
        # A view's memory is its region of the storage; the memory outlives the array's handle.
        tail = np.asarray(x.slice(90, 100))
        del x
        np.testing.assert_array_equal(tail, np.arange(90, 100, dtype=np.float32))
        self.assertEqual(np.asarray(y, dtype=np.float64).dtype, np.float64)

    def test_every_numpy_dtype_crosses_both_ways(self):
        # Under numpy 1.24+ and 2.x alike: bindings that read numpy's dtype struct
        # at numpy 1's offsets refused numpy 2's int64 ("has no Stitch dtype").
        cases = [
            ("f16", np.float16, "add(x, y)", lambda a, b: a + b),
            ("f32", np.float32, "add(x, y)", lambda a, b: a + b),
            ("f64", np.float64, "add(x, y)", lambda a, b: a + b),
            ("i8", np.int8, "add(x, y)", lambda a, b: (a + b).astype(np.int8)),
            ("i32", np.int32, "mul(x, y)", lambda a, b: a * b),
            ("i64", np.int64, "sub(x, y)", lambda a, b: a - b),
            ("bool", np.bool_, "xor(x, y)", lambda a, b: a ^ b),
        ]
        rng = np.random.default_rng(3)
        for name, dtype, op, want in cases:
            with self.subTest(dtype=name, numpy=np.__version__):
                g = stitch.parse(f"graph g(x: {name}[N], y: {name}[N]) {{\n  z = {op}\n  return z\n}}\n",
                                 "dtypes.stitch").graphs["g"]
                x = rng.integers(0, 2 if name == "bool" else 100, 37).astype(dtype)
                y = rng.integers(0, 2 if name == "bool" else 100, 37).astype(dtype)
                run = stitch.compile(g, backend="cpu", cache_dir=self.cache)
                z = run(x, y)
                self.assertEqual(z.dtype, np.dtype(dtype))
                np.testing.assert_array_equal(z, want(x, y))
                np.testing.assert_array_equal(stitch.interpret(g, x, y), z)

    def test_run_at_reads_and_writes_memory_by_address(self):
        import ml_dtypes

        bf16 = np.dtype(ml_dtypes.bfloat16)
        g = stitch.parse("graph g(x: bf16[4, 8], y: f32[8]) {\n  z = mul(cast(x, to=f32), y)\n"
                         "  w = cast(z, to=bf16)\n  return z, w\n}\n", "at.stitch").graphs["g"]
        run = stitch.compile(g, backend="cpu", cache_dir=self.cache)
        rng = np.random.default_rng(3)
        x = rng.standard_normal((4, 8)).astype(bf16)
        y = rng.standard_normal(8).astype(np.float32)
        z, w = np.empty((4, 8), np.float32), np.empty((4, 8), bf16)
        address = lambda a: a.__array_interface__["data"][0]
        self.assertIsNone(run.run_at([address(x), address(y)], [address(z), address(w)]))
        want_z, want_w = run(x, y)
        np.testing.assert_array_equal(z, want_z)
        np.testing.assert_array_equal(w.astype(np.float32), want_w.astype(np.float32))
        with self.assertRaisesRegex(stitch.Error, "run_at: 1 inputs and 2 outputs for a graph of 2 parameters"):
            run.run_at([address(x)], [address(z), address(w)])
        with self.assertRaisesRegex(stitch.Error, "output 0 overlaps an input"):
            run.run_at([address(x), address(y)], [address(x), address(w)])
        symbolic = stitch.compile(stitch.parse("graph s(x: f32[N, 8]) {\n  y = softmax(x, axis=1)\n  return y\n}\n")
                                  .graphs["s"], cache_dir=self.cache)
        with self.assertRaisesRegex(stitch.Error, "parameter 0 has the symbol N, which `symbols` does not bind"):
            symbolic.run_at([address(y)], [address(z)])
        with self.assertRaisesRegex(stitch.Error, "symbol N"):
            symbolic.run_at([address(y)], [address(z)], {"N": -1})
        for n in (3, 11):  # one executable, any extent of N
            a = rng.standard_normal((n, 8)).astype(np.float32)
            b = np.empty((n, 8), np.float32)
            symbolic.run_at([address(a)], [address(b)], {"N": n})
            np.testing.assert_array_equal(b, symbolic(a))

    def test_run_at_on_device_memory_through_the_simulated_driver(self):
        """run_at(..., device=True) on a CUDA executable: device addresses in and out,
        ordered on the caller's stream, nothing through the host. No GPU here: the
        CUDA back end runs on the simulated driver (docs/cuda-sim.md), in a child
        process, since a process opens its CUDA driver once; the device memory is the
        driver's own, allocated through ctypes as a framework's allocator would."""
        source = os.environ.get("STITCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
        driver = os.environ.get("STITCH_CUDA_SIM_DRIVER") or os.path.join(source, "build", "libstitch_cuda_sim.so")
        if not os.path.exists(driver):
            self.skipTest(f"no simulated CUDA driver at {driver} (a build with the CUDA toolkit makes it)")
        script = r"""
import ctypes, sys
import numpy as np, ml_dtypes, stitch
sim = ctypes.CDLL(sys.argv[1])
def fn(*names):
    for n in names:
        if hasattr(sim, n):
            return getattr(sim, n)
    raise AssertionError(names)
alloc, free = fn("cuMemAlloc_v2", "cuMemAlloc"), fn("cuMemFree_v2", "cuMemFree")
to_device, to_host = fn("cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync"), fn("cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync")
for f in (alloc, free, to_device, to_host):
    f.restype = ctypes.c_int
assert stitch.cuda_available()
def device(a):
    p = ctypes.c_uint64()
    assert alloc(ctypes.byref(p), ctypes.c_size_t(max(a.nbytes, 1))) == 0
    assert to_device(p, ctypes.c_void_p(a.ctypes.data), ctypes.c_size_t(a.nbytes), None) == 0
    return p.value
def host(p, like):
    a = np.empty_like(like)
    assert to_host(ctypes.c_void_p(a.ctypes.data), ctypes.c_uint64(p), ctypes.c_size_t(a.nbytes), None) == 0
    return a
bf16 = np.dtype(ml_dtypes.bfloat16)
g = stitch.parse("graph g(x: bf16[N, 8], y: f32[8]) {\n  z = mul(cast(x, to=f32), y)\n"
                 "  s = reduce_sum(z, axes=[1])\n  w = cast(z, to=bf16)\n  return s, w, y\n}\n").graphs["g"]
run = stitch.compile(g, backend="cuda")
assert run.backend == "cuda"
rng = np.random.default_rng(3)
for n in (3, 17):
    x = rng.standard_normal((n, 8)).astype(bf16)
    y = rng.standard_normal(8).astype(np.float32)
    want = [np.asarray(v) for v in stitch.interpret(g, x, y)]
    ins = [device(x), device(y)]
    outs = [device(np.zeros_like(w)) for w in want]
    assert run.run_at(ins, outs, {"N": n}, device=True, stream=0) is None
    got = [host(p, w) for p, w in zip(outs, want)]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1].astype(np.float32), want[1].astype(np.float32))
    np.testing.assert_array_equal(got[2], y)
    try:
        run.run_at(ins, [outs[0], ins[0], outs[2]], {"N": n}, device=True)
        raise AssertionError("an output over an input was accepted")
    except stitch.Error as e:
        assert "output 1 overlaps an input" in str(e), e
    for p in ins + outs:
        assert free(ctypes.c_uint64(p)) == 0
cpu = stitch.compile(g, backend="cpu")
try:
    cpu.run_at([0, 0], [0, 0, 0], {"N": 1}, device=True)
    raise AssertionError("the cpu executable took device memory")
except stitch.Error as e:
    assert "compiled for the CPU" in str(e), e
print("ok")
"""
        env = dict(os.environ, STITCH_CUDA_DRIVER=driver, STITCH_CACHE_DIR=self.cache)
        done = subprocess.run([sys.executable, "-c", script, driver], env=env, capture_output=True, text=True,
                              timeout=600)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("ok", done.stdout)

    def test_bf16_crosses_as_ml_dtypes_arrays_and_torch_tensors_in_place(self):
        import ml_dtypes

        bf16 = np.dtype(ml_dtypes.bfloat16)
        g = stitch.parse("graph g(x: bf16[N], y: bf16[N]) {\n  z = add(x, y)\n  return z\n}\n",
                         "bf16.stitch").graphs["g"]
        rng = np.random.default_rng(5)
        x = rng.standard_normal(33).astype(bf16)
        y = rng.standard_normal(33).astype(bf16)
        run = stitch.compile(g, backend="cpu", cache_dir=self.cache)
        z = run(x, y)
        self.assertEqual(z.dtype, bf16)
        # One rounding of the exact f32 sum (bf16 + bf16 is exact in f32).
        want = (x.astype(np.float32) + y.astype(np.float32)).astype(bf16)
        np.testing.assert_array_equal(z.astype(np.float32), want.astype(np.float32))
        np.testing.assert_array_equal(stitch.interpret(g, x, y).astype(np.float32), want.astype(np.float32))
        out = np.empty(33, bf16)
        self.assertIs(run(x, y, out=(out,)), out)
        np.testing.assert_array_equal(out.astype(np.float32), want.astype(np.float32))
        try:
            import torch
        except ImportError:
            return
        xt = torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
        yt = torch.from_numpy(y.astype(np.float32)).to(torch.bfloat16)
        zt = torch.empty(33, dtype=torch.bfloat16)
        run(xt, yt, out=(zt,))  # written into zt's memory through DLPack
        self.assertTrue(torch.equal(zt, (xt.float() + yt.float()).to(torch.bfloat16)))
        # Read in place too: the input's own memory is seen to overlap the output.
        with self.assertRaisesRegex(stitch.Error, "overlaps an input"):
            run(xt, yt, out=(xt,))
        # A strided view is read (copied into the layout the graph takes), the result the same.
        wide = torch.stack([xt, yt], dim=1)
        run(wide[:, 0], wide[:, 1], out=(zt,))
        self.assertTrue(torch.equal(zt, (xt.float() + yt.float()).to(torch.bfloat16)))

    def test_bad_arrays_name_the_argument_and_what_was_expected(self):
        g = self.module.graphs["two"]
        run = stitch.compile(g, backend="cpu", cache_dir=self.cache)
        x = np.linspace(0, 1, 10)
        with self.assertRaisesRegex(stitch.Error, r"argument 1: a numpy array of dtype complex128 has no Stitch dtype"):
            run(x, x.astype(np.complex128))
        with self.assertRaisesRegex(stitch.Error, r"argument 0: a numpy array of dtype str32 has no Stitch dtype"):
            run("x", x)
        # An output is written in place, so a view it cannot be written through is refused.
        wide = np.zeros((10, 2))
        with self.assertRaisesRegex(stitch.Error, r"out\[0\] must be a writable C-contiguous float64 array"):
            run(x, x, out=(wide[:, 0], np.zeros(10)))
        with self.assertRaisesRegex(stitch.Error, r"out\[1\] must be an array or a DLPack tensor, not list"):
            run(x, x, out=(np.zeros(10), [0.0] * 10))

    def test_python_m_stitch_runs_the_command_line(self):
        version = subprocess.run([sys.executable, "-m", "stitch", "--version"], capture_output=True, text=True)
        self.assertEqual(version.returncode, 0, version.stderr)
        self.assertEqual(version.stdout.split()[0], "stitch")
        bad = subprocess.run([sys.executable, "-m", "stitch", "plan", "no-such-file.stitch"], capture_output=True,
                             text=True)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("no-such-file.stitch", bad.stderr)
        doctor = subprocess.run([sys.executable, "-m", "stitch", "doctor"], capture_output=True, text=True)
        self.assertEqual(doctor.returncode, 0, doctor.stdout)
        self.assertIn("the CPU back end has everything it needs", doctor.stdout)

    def test_a_missing_compiler_is_a_stitch_error_naming_the_fix(self):
        # First use on a machine without a C++ compiler: a stitch.Error that says what to
        # install, not a slow result from the interpreter. A fresh cache, so nothing loads.
        script = (
            "import numpy as np, stitch\n"
            "g = stitch.parse('graph g(x: f32[4]) {\\n  y = exp(x)\\n  return y\\n}\\n')\n"
            "try:\n"
            "    stitch.compile(g.graphs['g'])(np.ones(4, np.float32))\n"
            "except stitch.Error as e:\n"
            "    print('stitch.Error:', e)\n")
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, STITCH_CXX="stitch-no-such-compiler", STITCH_CACHE_DIR=cache)
            r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("stitch.Error: ", r.stdout)
        self.assertIn("`stitch-no-such-compiler` is not on PATH: apt-get install g++", r.stdout)
        self.assertIn("stitch doctor", r.stdout)

    def test_a_package_runs_without_a_compiler(self):
        # `python -m stitch package` writes it; a process with no compiler and an
        # empty cache loads it (docs/packages.md) and computes what compile() does.
        with tempfile.TemporaryDirectory() as work:
            graph = os.path.join(work, "ln.stitch")
            with open(graph, "w") as f:
                f.write(GRAPHS.replace("f32[N, 64]", "f32[5, 64]"))
            package = os.path.join(work, "ln.stitchpkg")
            built = subprocess.run([sys.executable, "-m", "stitch", "package", graph, "-o", package],
                                   capture_output=True, text=True, env=dict(os.environ, STITCH_CACHE_DIR=self.cache))
            self.assertEqual(built.returncode, 0, built.stderr)
            script = (
                "import numpy as np, stitch, sys\n"
                "run = stitch.load_package(sys.argv[1])\n"
                "rng = np.random.default_rng(1)\n"
                "x, g, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 64), (64,), (64,)))\n"
                "np.save(sys.argv[2], run(x, g, b))\n")
            env = dict(os.environ, STITCH_CXX="false", STITCH_CACHE_DIR=os.path.join(work, "empty"))
            r = subprocess.run([sys.executable, "-c", script, package, os.path.join(work, "y.npy")],
                               capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("warning", r.stderr)
            rng = np.random.default_rng(1)
            x, g, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 64), (64,), (64,)))
            shaped = stitch.parse(GRAPHS.replace("f32[N, 64]", "f32[5, 64]"), "g.stitch")
            want = stitch.compile(shaped.graphs["layernorm"], cache_dir=self.cache)(x, g, b)
            np.testing.assert_array_equal(np.load(os.path.join(work, "y.npy")), want)
            with self.assertRaises(stitch.Error):
                stitch.load_package(graph)  # a graph file is not a package

    def test_bad_input_raises_stitch_error_with_the_cli_message(self):
        with self.assertRaises(stitch.Error) as e:
            stitch.parse("graph g(x: f32[4]) {\n  y = nosuchop(x)\n  return y\n}\n", "bad.stitch")
        self.assertRegex(str(e.exception), r"^bad\.stitch:2:\d+: error: ")
        self.assertTrue(issubclass(stitch.Error, ValueError))
        g = self.module.graphs["layernorm"]
        run = stitch.compile(g, cache_dir=self.cache)
        with self.assertRaises(stitch.Error) as e:
            run(np.zeros((3, 65), np.float32), np.zeros(64, np.float32), np.zeros(64, np.float32))
        self.assertIn("x", str(e.exception))
        with self.assertRaises(stitch.Error):
            run(np.zeros((3, 64), np.float32))  # too few inputs
        with self.assertRaises(stitch.Error):
            stitch.compile(g, planner="no_such_planner")
        with self.assertRaises(stitch.Error):
            stitch.compile(g, backend="tpu")
        with self.assertRaises(stitch.Error):
            run(np.zeros((3, 64), np.complex64), np.zeros(64, np.float32), np.zeros(64, np.float32))
        rt = stitch.LazyRuntime(cache_dir=self.cache)
        with self.assertRaises(stitch.Error):
            rt.call(self.kernels["saxpy"], 1.0, rt.zeros([3]), rt.zeros([4]))  # n bound to 3 and 4
        with self.assertRaises(stitch.Error):
            rt.call(self.kernels["saxpy"], "one", rt.zeros([3]), rt.zeros([3]))
        with self.assertRaises(stitch.Error):
            stitch.LazyRuntime(mode="lazy")
        # An index out of range fails the read that runs the call.
        y = rt.zeros([4])
        rt.call(self.kernels["gather"], rt.array(np.array([0, 1, 2, 9])), rt.zeros([5]), y)
        with self.assertRaises(stitch.Error) as e:
            y.numpy()
        self.assertIn("outside axis 0 of extent 5", str(e.exception))

    def test_sizes_over_the_limits_raise_stitch_error(self):
        # docs/limits.md: one tensor holds at most 2^48 bytes, checked where a size is read.
        limit = "281474976710656 bytes (2^48)"
        with self.assertRaises(stitch.Error) as e:
            stitch.parse("graph g(x: f32[100000000000, 100000000]) {\n  y = neg(x)\n  return y\n}\n", "big.stitch")
        self.assertRegex(str(e.exception), r"^big\.stitch:1:\d+: error: parameter 'x'")
        self.assertIn(limit, str(e.exception))
        b = stitch.GraphBuilder()
        with self.assertRaises(stitch.Error) as e:
            b.param("x", "f64", [2**46])
        self.assertIn(limit, str(e.exception))
        # A symbol bound by an input: checked before anything is allocated for the intermediate.
        g = stitch.parse("graph w(x: f32[N, 1]) {\n  b = broadcast(x, shape=[N, 70368744177664])\n"
                         "  s = reduce_sum(b, axes=[1])\n  return s\n}\n", "wide.stitch").graphs["w"]
        run = stitch.compile(g, planner="none", cache_dir=self.cache)
        with self.assertRaises(stitch.Error) as e:
            run(np.ones((2, 1), np.float32))
        self.assertIn(limit, str(e.exception))
        rt = stitch.LazyRuntime(cache_dir=self.cache)
        with self.assertRaises(stitch.Error) as e:
            rt.zeros([2**47])
        self.assertIn(limit, str(e.exception))
        with self.assertRaises(stitch.Error):
            rt.zeros([-1])
        with self.assertRaises(stitch.Error) as e:
            stitch.parse("kernel k(y: f32[n]) over i < 300000000000000 {\n  y[0] = 1.0\n}\n", "k.stitch")
        self.assertIn("2^48", str(e.exception))

    def test_an_onnx_model_runs_with_its_bound_initializers(self):
        # Written by Debian's python3-onnx (setup.sh --tests installs it), which .venv does not hold.
        path = os.path.join(self.cache, "model.onnx")
        script = (
            "import sys, numpy as np, onnx\n"
            "from onnx import helper, numpy_helper, TensorProto as T\n"
            "w = numpy_helper.from_array(np.arange(4, dtype=np.float32), 'w')\n"
            "g = helper.make_graph([helper.make_node('Add', ['input:0', 'w'], ['s']),\n"
            "                       helper.make_node('Relu', ['s'], ['y'])], 'addrelu',\n"
            "    [helper.make_tensor_value_info('input:0', T.FLOAT, [2, 4])],\n"
            "    [helper.make_tensor_value_info('y', T.FLOAT, [2, 4])], [w])\n"
            "onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]), sys.argv[1])\n")
        subprocess.run(["/usr/bin/python3", "-c", script, path], check=True)
        model = stitch.load_onnx(path)
        self.assertEqual(model.inputs, ["input_0"])
        self.assertEqual(model.input_names, {"input:0": "input_0"})
        np.testing.assert_array_equal(model.bound["w"], np.arange(4, dtype=np.float32))
        x = np.array([[-5, 1, -1, 2], [0, -3, 3, -9]], dtype=np.float32)
        run = stitch.compile(model.graph, cache_dir=self.cache)
        y = run(*model.arguments(x))
        np.testing.assert_array_equal(y, np.maximum(x + np.arange(4, dtype=np.float32), 0))
        # The bound tensors named constant (packed once where a conv reads them).
        constant = stitch.compile(model.graph, cache_dir=self.cache, constants=list(model.bound))
        np.testing.assert_array_equal(constant(*model.arguments(x)), y)
        with self.assertRaises(stitch.Error):
            stitch.compile(model.graph, cache_dir=self.cache, constants=["no_such_parameter"])
        with self.assertRaises(stitch.Error):
            model.arguments()  # the input is missing
        with self.assertRaises(stitch.Error):
            stitch.load_onnx(os.path.join(self.cache, "no-such.onnx"))

    def test_a_graph_file_loads(self):
        source = os.environ.get("STITCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
        m = stitch.load(os.path.join(source, "bench", "workloads", "softmax.stitch"))
        self.assertIn("softmax", " ".join(m.graphs))
        with self.assertRaises(stitch.Error):
            stitch.load(os.path.join(source, "no", "such.stitch"))


if __name__ == "__main__":
    unittest.main()
