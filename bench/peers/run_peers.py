#!/usr/bin/env python3
"""Time the peers (PyTorch eager, torch.compile, jax.jit) on the benchmark workloads.

    python3 bench/peers/run_peers.py [--workloads DIR ...] [--sweeps] [--small]
        [--peers torch_eager,torch_compile,jax_jit] [--repeat N] [--warmup N]
        [--device cuda|cpu] [--timer events|do_bench] [--jax-batch K]
        [--only NAME,...] [--check [--stitch BINARY]] --json OUT.json

Each row is one workload x one peer: the median of --repeat timed calls after
--warmup untimed ones (the first of which compiles), the minimal bytes of the
graph (`stitch bench`'s bytes_min) over that time, and a device-to-device copy
of the same footprint measured in the same run. docs/gpu-benchmarks.md has the
method; a peer that cannot run (jax not installed, no torch.compile) is skipped
with one line, and a peer that fails on one workload records the error in its
row and the run goes on.
"""

import argparse
import datetime
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

import workloads as wl

# JAX reserves most of the GPU's memory when its backend starts; torch shares the
# device in this process, so JAX allocates on demand instead.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

ALL_PEERS = ("torch_eager", "torch_compile", "torch_compile_max_autotune", "jax_jit")
DEFAULT_PEERS = "torch_eager,torch_compile,jax_jit"
TORCH_TIMER_NAMES = {"events": "cuda_events", "do_bench": "do_bench"}
# Relative error ||out - ref|| / ||ref|| allowed against the float64 reference.
TOLERANCE = {"f16": 1e-2, "f32": 1e-5, "f64": 1e-12}


class Skip(Exception):
    """A peer that cannot run in this environment (the message says why)."""


def _import_torch():
    try:
        import torch
    except ImportError as e:
        raise Skip(f"torch is not importable ({e})")
    return torch


def _median_and_spread(times):
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


class TorchTimer:
    """CUDA event pairs around each call on the GPU; perf_counter around each call on the CPU."""

    def __init__(self, device, timer):
        self.torch = _import_torch()
        self.device = device
        self.name = TORCH_TIMER_NAMES[timer] if device == "cuda" else "host"
        if self.name == "do_bench":
            try:
                import triton.testing
            except ImportError as e:
                sys.exit(f"run_peers: --timer do_bench needs triton ({e})")
            self.do_bench = triton.testing.do_bench

    def sync(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def first_call(self, call):
        start = time.perf_counter()
        out = call()
        self.sync()
        return out, time.perf_counter() - start

    def measure(self, call, warmup, repeat):
        for _ in range(warmup):
            call()
        self.sync()
        if self.name == "do_bench":
            # Triton's own harness: its time budgets (ms), and an L2 flush before every call.
            ms = self.do_bench(call, return_mode="all")
            return _median_and_spread([t / 1e3 for t in ms])
        if self.name == "host":
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                call()
                times.append(time.perf_counter() - start)
            return _median_and_spread(times)
        cuda = self.torch.cuda
        starts = [cuda.Event(enable_timing=True) for _ in range(repeat)]
        ends = [cuda.Event(enable_timing=True) for _ in range(repeat)]
        for start, end in zip(starts, ends):
            start.record()
            call()
            end.record()
        cuda.synchronize()
        return _median_and_spread([s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)])


class TorchPeer:
    def __init__(self, name, device, timer):
        self.name = name
        self.torch = _import_torch()
        self.mode = None
        if name != "torch_eager":
            if not hasattr(self.torch, "compile"):
                raise Skip(f"torch {self.torch.__version__} has no torch.compile")
            self.mode = "max-autotune-no-cudagraphs" if name == "torch_compile_max_autotune" else "default"
        if device == "cuda" and not self.torch.cuda.is_available():
            raise Skip("torch sees no CUDA device")
        self.device = device
        self.timer = TorchTimer(device, timer)
        self.timer_name = self.timer.name
        self.first_call = self.timer.first_call
        self.measure = self.timer.measure

    def prepare(self, family):
        if self.mode is None:
            return family.torch
        # A fresh Dynamo cache per workload: the sweeps call one function with many
        # shapes, which would otherwise turn on dynamic shapes or hit the recompile limit.
        self.torch._dynamo.reset()
        return self.torch.compile(family.torch, mode=self.mode, dynamic=False)

    def put(self, arrays):
        return [self.torch.from_numpy(a).to(self.device) for a in arrays]

    def fetch(self, outputs):
        return [o.detach().cpu().numpy() for o in outputs]

    def release(self):
        gc.collect()
        if self.device == "cuda":
            self.torch.cuda.empty_cache()


class JaxPeer:
    """jax.jit; timed by the host clock around a batch of calls ended by block_until_ready."""

    def __init__(self, name, device, batch):
        try:
            import jax
        except ImportError as e:
            raise Skip(f"jax is not importable ({e})")
        self.jax = jax
        self.name = name
        self.mode = None
        self.batch = batch
        platform_name = "gpu" if device == "cuda" else "cpu"
        try:
            self.dev = jax.devices(platform_name)[0]
        except RuntimeError as e:
            raise Skip(f"jax has no {platform_name} backend ({str(e).splitlines()[0]})")
        self.timer_name = "host_batch"

    def prepare(self, family):
        return self.jax.jit(family.jax)

    def put(self, arrays):
        return [self.jax.device_put(a, self.dev) for a in arrays]

    def fetch(self, outputs):
        return [np.asarray(o) for o in outputs]

    def release(self):
        gc.collect()

    def first_call(self, call):
        start = time.perf_counter()
        out = self.jax.block_until_ready(call())
        return out, time.perf_counter() - start

    def measure(self, call, warmup, repeat):
        for _ in range(warmup):
            self.jax.block_until_ready(call())
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(self.batch - 1):
                call()
            self.jax.block_until_ready(call())
            times.append((time.perf_counter() - start) / self.batch)
        return _median_and_spread(times)


def make_peers(names, args):
    peers = []
    for name in names:
        try:
            if name.startswith("torch"):
                peers.append(TorchPeer(name, args.device, args.timer))
            else:
                peers.append(JaxPeer(name, args.device, args.jax_batch))
        except Skip as e:
            print(f"run_peers: skipping {name}: {e}", file=sys.stderr)
    return peers


def run_once(peer, family, arrays):
    """(compiled fn, device inputs, outputs, wall seconds of the first call, compile included)."""
    fn = peer.prepare(family)
    args = peer.put(arrays)
    out, first_s = peer.first_call(lambda: fn(*args))
    return fn, args, out, first_s


# --- correctness check -------------------------------------------------------

class StitchInterpreter:
    """`stitch run --backend interp` on the check graph, to confirm the peers compute the graph itself."""

    name = "stitch_interp"

    def __init__(self, binary):
        self.binary = binary

    def outputs(self, w, arrays):
        with tempfile.TemporaryDirectory(prefix="run_peers_") as tmp:
            graph_file = os.path.join(tmp, "graph.stitch")
            with open(graph_file, "w") as f:
                f.write(w.text)
            out_dir = os.path.join(tmp, "out")
            cmd = [self.binary, "run", graph_file, "--graph", w.check.name, "--backend", "interp",
                   "--output-dir", out_dir]
            for (pname, _), a in zip(w.check.params, arrays):
                path = os.path.join(tmp, pname + ".npy")
                np.save(path, a)
                cmd += ["--input", f"{pname}={path}"]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"stitch run exited {done.returncode}: {done.stderr.strip()[:300]}")
            return [np.load(os.path.join(out_dir, name + ".npy")) for name in w.check.returns]


def rel_error(out, ref):
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape:
        return float("inf")
    denom = np.linalg.norm(ref)
    diff = np.linalg.norm(out - ref)
    return float(diff / denom) if denom > 0 else float(diff)


def _peer_outputs(peer, family, arrays):
    return peer.fetch(run_once(peer, family, arrays)[2])


def check(selected, peers, seed, interpreter=None):
    """Each peer (and the Stitch interpreter, if given) against the float64 numpy
    reference on the check shape; ([row], all_ok)."""
    rows, all_ok = [], True
    for w in selected:
        family = wl.implementation(w)
        if family is None:
            continue
        arrays = wl.make_inputs(w.check, seed)
        ref = family.numpy(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in arrays])
        tol = max(TOLERANCE.get(t.dtype, 0.0) for t in w.check.results) if w.check.results else 1e-5
        parts = []
        runs = [(p.name, lambda p=p: _peer_outputs(p, family, arrays), p.release) for p in peers]
        if interpreter is not None:
            runs.append((interpreter.name, lambda: interpreter.outputs(w, arrays), lambda: None))
        for name, outputs, release in runs:
            row = {"workload": w.name, "shape_of": w.check.name, "peer": name, "tolerance": tol}
            try:
                got = outputs()
                errs = [rel_error(o, r) for o, r in zip(got, ref)]
                if len(got) != len(ref):
                    errs.append(float("inf"))
                row["rel_error"] = max(errs)
                row["ok"] = row["rel_error"] <= tol
                parts.append(f"{name} {row['rel_error']:.1e} {'ok' if row['ok'] else 'FAIL'}")
            except Exception as e:  # a peer failing here is a finding, not a crash
                row["ok"], row["error"] = False, f"{type(e).__name__}: {e}"
                parts.append(f"{name} ERROR {row['error'][:120]}")
            all_ok &= row["ok"]
            rows.append(row)
            release()
        print(f"check {w.name} (on {w.check.name} shapes): " + ", ".join(parts), file=sys.stderr)
    return rows, all_ok


# --- timing -----------------------------------------------------------------

def copy_gbps(timer, bytes_min, warmup, repeat):
    """A device-to-device f32 copy of bytes_min / 2 bytes: bytes_min bytes of traffic, GB/s."""
    torch = timer.torch
    n = max(1, bytes_min // 8)
    src = torch.ones(n, dtype=torch.float32, device=timer.device)
    dst = torch.empty_like(src)
    stats = timer.measure(lambda: dst.copy_(src), warmup, repeat)
    return 8 * n / stats["median_s"] / 1e9


def time_peer(peer, family, arrays, warmup, repeat):
    """{median_s, min_s, max_s, first_call_s}; the device inputs die with this frame."""
    fn, dev_args, _, first_s = run_once(peer, family, arrays)
    stats = peer.measure(lambda: fn(*dev_args), max(0, warmup - 1), repeat)
    stats["first_call_s"] = first_s
    return stats


def time_workload(w, peers, copy_timer, args):
    family = wl.implementation(w)
    bytes_min = w.bytes_min
    arrays = wl.make_inputs(w.signature, args.seed)
    copy = None
    if copy_timer is not None and bytes_min:
        copy = copy_gbps(copy_timer, bytes_min, args.warmup, args.repeat)
        if args.device == "cuda":
            copy_timer.torch.cuda.empty_cache()
    rows = []
    for peer in peers:
        row = {"workload": w.name, "peer": peer.name, "mode": peer.mode, "timer": peer.timer_name,
               "bytes_min": bytes_min, "copy_gbps": copy}
        try:
            row.update(time_peer(peer, family, arrays, args.warmup, args.repeat))
            row["gbps"] = bytes_min / row["median_s"] / 1e9 if bytes_min else None
            row["fraction_of_copy"] = row["gbps"] / copy if copy and row["gbps"] else None
            shown = f"{row['median_s'] * 1e6:10.1f} us  {row['gbps'] or 0:8.1f} GB/s"
            if row["fraction_of_copy"] is not None:
                shown += f"  {row['fraction_of_copy']:.2f} of copy"
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}".strip()
            shown = "ERROR " + row["error"].splitlines()[0][:160]
            if args.verbose:
                traceback.print_exc()
        peer.release()
        print(f"{w.name:32s} {peer.name:28s} {shown}", file=sys.stderr)
        rows.append(row)
    return rows, copy


# --- the run's machine --------------------------------------------------------

def _version(module):
    try:
        return __import__(module).__version__
    except Exception:
        return None


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and ":" in line:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def allocator():
    """The allocator of this process: jemalloc when LD_PRELOAD names it (bench.sh --peers), else default."""
    return "jemalloc" if "jemalloc" in os.environ.get("LD_PRELOAD", "") else "default"


def use_all_cores():
    """On the CPU, torch's intra-op threads = every core, as Stitch's OpenMP kernels and XLA use."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(os.cpu_count())


def machine(args):
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "hostname": platform.node(), "python": platform.python_version(),
            "numpy": np.__version__, "device": args.device}
    try:
        import torch
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
        info["cuda"] = torch.version.cuda
        if args.device == "cuda" and torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            info["gpu"] = torch.cuda.get_device_name(0)
            info["sm_count"] = props.multi_processor_count
            info["memory_bytes"] = props.total_memory
            info["l2_bytes"] = getattr(props, "L2_cache_size", None)
    except ImportError:
        info["torch"] = None
    info["triton"] = _version("triton")
    if "jax_jit" in args.peer_names:
        info["jax"] = _version("jax")
        info["jaxlib"] = _version("jaxlib")
    if args.device == "cpu":
        info["cpu"] = _cpu_model()
        info["cores"] = os.cpu_count()
        info["allocator"] = allocator()
        info["ld_preload"] = os.environ.get("LD_PRELOAD", "")
        info["malloc_conf"] = os.environ.get("MALLOC_CONF", "")
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30)
            info["driver"] = out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout else None
        except (OSError, subprocess.SubprocessError, IndexError):
            info["driver"] = None
    return info


# --- command line ---------------------------------------------------------------

def select(all_workloads, args):
    if args.only:
        by_name = {w.name: w for w in all_workloads}
        names = [n for n in args.only.split(",") if n]
        unknown = [n for n in names if n not in by_name]
        if unknown:
            sys.exit(f"run_peers: unknown workload(s) {', '.join(unknown)} (not a graph in the loaded files)")
        return [by_name[n] for n in names]
    kinds = {"small"} if args.small else {"entry", "sweep"}
    return [w for w in all_workloads if w.kind in kinds]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", action="append", metavar="DIR",
                   help="a directory of .stitch files (repeatable; default bench/workloads)")
    p.add_argument("--sweeps", action="store_true", help="add the Triton tutorial sweep points (sweeps.py)")
    p.add_argument("--small", action="store_true",
                   help="time each workload's _small test graph instead of its entry graph (CPU smoke runs)")
    p.add_argument("--only", help="comma-separated graph names to run (entry, _small or sweep names)")
    p.add_argument("--peers", default=DEFAULT_PEERS, help=f"comma-separated, of {', '.join(ALL_PEERS)}")
    p.add_argument("--repeat", type=int, default=50, help="timed calls per row (default 50)")
    p.add_argument("--warmup", type=int, default=5,
                   help="untimed calls before timing, the first of which compiles (default 5, at least 1)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--timer", choices=("events", "do_bench"), default="events",
                   help="torch peers on cuda: CUDA event pairs (default) or triton.testing.do_bench")
    p.add_argument("--jax-batch", type=int, default=10, help="jax calls per host-timed batch (default 10)")
    p.add_argument("--seed", type=int, default=1, help="input seed (default 1, as stitch bench)")
    p.add_argument("--check", action="store_true",
                   help="first compare every peer with the float64 numpy reference on the _small shapes")
    p.add_argument("--stitch", metavar="BINARY",
                   help="with --check: also compare `BINARY run --backend interp` with the reference")
    p.add_argument("--json", metavar="OUT", help="write the results here (without it, only --check runs)")
    p.add_argument("--verbose", action="store_true", help="print the traceback of a failing row")
    args = p.parse_args(argv)
    args.peer_names = [n for n in args.peers.split(",") if n]
    bad = [n for n in args.peer_names if n not in ALL_PEERS]
    if bad:
        p.error(f"unknown peer(s) {', '.join(bad)}; known: {', '.join(ALL_PEERS)}")
    if args.repeat < 1 or args.warmup < 1 or args.jax_batch < 1:
        p.error("--repeat, --warmup and --jax-batch must be at least 1")
    if not args.json and not args.check:
        p.error("nothing to do: give --json OUT.json, --check, or both")
    return args


def write_json(path, doc):
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def main(argv=None):
    args = parse_args(argv)
    all_workloads = wl.load(args.workloads, with_sweeps=args.sweeps or bool(args.only))
    missing = sorted({w.name for w in all_workloads if wl.implementation(w) is None and w.kind != "small"})
    print(f"run_peers: workloads without a peer implementation: {', '.join(missing) or 'none'}",
          file=sys.stderr)
    selected = [w for w in select(all_workloads, args) if wl.implementation(w) is not None]
    if args.device == "cuda":
        try:
            cuda_ok = _import_torch().cuda.is_available()
        except Skip:
            cuda_ok = False
        if not cuda_ok:
            sys.exit("run_peers: --device cuda but torch sees no CUDA device (use --device cpu for a smoke run)")
    if args.device == "cpu":
        use_all_cores()
    peers = make_peers(args.peer_names, args)
    if not peers:
        sys.exit("run_peers: no peer can run here")

    doc = {"machine": machine(args), "backend": args.device, "allocator": allocator(),
           "repeat": args.repeat, "warmup": args.warmup,
           "timers": {"torch": TORCH_TIMER_NAMES[args.timer] if args.device == "cuda" else "host",
                      "jax": f"host_batch({args.jax_batch})"},
           "peers": [p.name for p in peers],
           "skipped_peers": [n for n in args.peer_names if n not in [p.name for p in peers]],
           "missing_implementations": missing}
    jax_peer = next((p for p in peers if isinstance(p, JaxPeer)), None)
    if jax_peer is not None:
        doc["machine"]["jax_device"] = f"{jax_peer.dev.platform}: {jax_peer.dev.device_kind}"
    ok = True
    if args.check:
        interpreter = StitchInterpreter(args.stitch) if args.stitch else None
        doc["check"], ok = check(selected, peers, args.seed, interpreter)
    if args.json:
        try:
            copy_timer = TorchTimer(args.device, args.timer)
        except Skip as e:
            print(f"run_peers: no copy baseline: {e}", file=sys.stderr)
            copy_timer = None
        results, copies = [], []
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        # Written after every workload (atomically), so a run stopped at a time
        # limit keeps the rows it measured; "complete" says whether it finished.
        for i, w in enumerate(selected):
            rows, copy = time_workload(w, peers, copy_timer, args)
            results += rows
            if copy:
                copies.append(copy)
            doc["copy_gbps"] = statistics.median(copies) if copies else None
            doc["results"] = results
            doc["complete"] = i + 1 == len(selected)
            write_json(args.json, doc)
        if not selected:
            doc["copy_gbps"], doc["results"], doc["complete"] = None, [], True
            write_json(args.json, doc)
        print(f"run_peers: wrote {len(results)} rows to {args.json}", file=sys.stderr)
    if not ok:
        print("run_peers: the check FAILED for at least one workload (see above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
