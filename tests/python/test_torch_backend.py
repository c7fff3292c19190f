"""torch.compile(model, backend="stitch") (docs/torch.md): blocks built from torch.nn
compiled by the backend and compared with eager PyTorch on random inputs; every ATen op
the lowering maps, in a few graphs per dtype; training; what falls back to PyTorch.

Each test also asserts that Stitch partitions ran (kernels > 0, no partition fell back),
so a lowering that silently leaves everything to PyTorch fails.

Tolerances (docs/torch.md): Stitch and PyTorch differ in reduction order and in the
vector math library behind exp/tanh/erf (a few ulp), never in the formula. f32 ops and
norms on O(1) inputs: rtol = atol = 1e-5. f32 blocks with matrix products, whose
outputs feed PyTorch's BLAS so a few-ulp difference grows with K: 1e-4. f64:
1e-12. f16: 1e-2 (PyTorch keeps f32 inside some ops, logsumexp; Stitch rounds each of
the ops it expands into, so 1 f16 ulp of an intermediate near 4, 4e-3, may show).
"""

import copy
import os
import shutil
import sys
import tempfile
import unittest
from unittest import mock
import warnings

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    raise unittest.SkipTest("torch is not importable: the torch.compile backend is not tested")

import stitch
import stitch.torch_backend as backend

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import BertLayer, GPT2Block, LlamaBlock  # noqa: E402

F32 = dict(rtol=1e-5, atol=1e-5)
# Blocks with matrix products: eager f32 itself is up to 5.5e-4 from the float64
# result on the GPT-2 test block (30 seeds, 2026-12-02), Stitch up to 4.7e-4, so two
# f32 results differ by a few 1e-4; test_f32_blocks_are_as_close_to_float64_as_eager
# checks that Stitch is no further from the exact result than eager is.
F32_BLOCK = dict(rtol=1e-3, atol=1e-3)
F64 = dict(rtol=1e-12, atol=1e-12)
F16 = dict(rtol=1e-2, atol=1e-2)
# bf16 keeps 8 significant bits (f16 11): an output summing several rounded terms (op_soup's
# powers: 9 terms up to about 8) is off by an ulp of its largest term, 0.03, where a pow
# or exp differs by one ulp from PyTorch's; f16's tolerance made 8 times wider.
BF16 = dict(rtol=8e-2, atol=8e-2)

_cache = None
_saved_cache_env = None


def setUpModule():
    global _cache, _saved_cache_env
    _cache = tempfile.mkdtemp(prefix="stitch-torch-")
    _saved_cache_env = os.environ.get("STITCH_CACHE_DIR")
    os.environ["STITCH_CACHE_DIR"] = _cache
    torch.manual_seed(0)


def tearDownModule():
    if _saved_cache_env is None:
        os.environ.pop("STITCH_CACHE_DIR", None)
    else:
        os.environ["STITCH_CACHE_DIR"] = _saved_cache_env
    shutil.rmtree(_cache, ignore_errors=True)


class RMSNormByHand(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def randomise(module):
    """Parameters drawn at random (LayerNorm starts at 1 and 0, which hides mistakes)."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.5 + (1.0 if p.dim() == 1 else 0.0))
    return module


class StitchCase(unittest.TestCase):
    def setUp(self):
        torch._dynamo.reset()
        backend.reset_stats()

    def compiled_matches(self, fn, *args, tol=F32, tol_of=None, **compile_kwargs):
        """Runs fn compiled by backend="stitch" and eagerly, compares every output (output
        i within tol_of[i] where given, else tol), and returns the stats of the graphs
        compiled."""
        compiled = torch.compile(fn, backend="stitch", **compile_kwargs)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a partition falling back warns: an error here
            with torch.inference_mode():
                got = compiled(*args)
        with torch.inference_mode():
            want = fn(*args)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        self.assertEqual(len(got), len(want))
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertEqual(g.dtype, w.dtype, f"output {i}")
            torch.testing.assert_close(g, w, **(tol_of or {}).get(i, tol), msg=lambda m, i=i: f"output {i}: {m}")
        return self.assert_stitch_ran()

    def assert_as_close_to_float64_as_eager(self, model, args, what, options=None):
        """Stitch's output (the default options, or `options`) at most twice as far from
        the model run in float64 as eager's (the largest element's distance)."""
        exact = copy.deepcopy(model).double()(*(a.double() if a.is_floating_point() else a for a in args))
        torch._dynamo.reset()
        with torch.inference_mode():
            got = torch.compile(model, backend="stitch", options=options)(*args)
            eager = model(*args)
        stitch_error = (got.double() - exact).abs().max().item()
        eager_error = (eager.double() - exact).abs().max().item()
        self.assertLessEqual(stitch_error, 2 * eager_error + 1e-5, f"{what}: Stitch {stitch_error}, eager {eager_error}")

    def assert_stitch_ran(self):
        stats = backend.all_stats()
        self.assertTrue(stats, "the backend compiled no graph")
        self.assertGreater(sum(s.kernel_count for s in stats), 0, "no Stitch kernel ran:\n" + "\n".join(map(str, stats)))
        for s in stats:
            for p in s.partitions:
                self.assertIsNone(p.fallback, f"{p.name} fell back to PyTorch")
        return stats


def float64_gradients(model, args):
    """The parameters' and the first input's gradients of square().mean() of the model
    run in float64."""
    exact = copy.deepcopy(model).double()
    x = args[0].double().requires_grad_()
    rest = [a.double() if a.is_floating_point() else a for a in args[1:]]
    exact(x, *rest).square().mean().backward()
    return [p.grad for p in exact.parameters()] + [x.grad]


class BertLayerWithMask(BertLayer):
    """The BERT layer with its own example inputs: a padding mask over the last quarter."""

    def example_inputs(self):
        mask = torch.ones(2, 16)
        mask[:, 12:] = 0
        return torch.randn(2, 16, 64), mask


def products_in_torch(stats):
    """The linear layers' products PyTorch runs: addmm, or mm where the bias joined a
    partition (torch_partitions.split_bias_adds)."""
    return stats.torch_ops["aten.addmm.default"] + stats.torch_ops["aten.mm.default"]


class Blocks(StitchCase):
    def test_layer_norm(self):
        ln = randomise(nn.LayerNorm(256))
        stats = self.compiled_matches(ln, torch.randn(64, 256))
        # The whole module is one partition: one kernel, nothing left to PyTorch.
        self.assertEqual(len(stats[0].partitions), 1)
        self.assertEqual(sum(stats[0].torch_ops.values()), 0)
        self.compiled_matches(randomise(nn.LayerNorm([5, 20])), torch.randn(3, 7, 5, 20))

    def test_softmax(self):
        self.compiled_matches(nn.Softmax(dim=-1), torch.randn(64, 256) * 4)
        x = torch.randn(4, 8, 33)
        x[:, :, 5:] = float("-inf")
        self.compiled_matches(lambda t: F.softmax(t, dim=1), x.transpose(1, 2).contiguous())

    def test_rms_norm(self):
        self.compiled_matches(randomise(nn.RMSNorm(256, eps=1e-6)), torch.randn(64, 256))
        self.compiled_matches(RMSNormByHand(256), torch.randn(4, 16, 256))

    def test_cross_entropy_head(self):
        # The loss picks each row's target by a gather: all of it in one partition.
        logits, target = torch.randn(32, 100), torch.randint(0, 100, (32,))
        stats = self.compiled_matches(lambda z, t: F.cross_entropy(z, t), logits, target)
        self.assertEqual(len(stats[0].partitions), 1)
        self.assertEqual(sum(stats[0].torch_ops.values()), 0, stats[0].torch_ops)

    def test_gelu_mlp(self):
        mlp = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))
        stats = self.compiled_matches(mlp, torch.randn(32, 64), tol=F32_BLOCK)
        self.assertEqual(products_in_torch(stats[0]), 2, "the matrix products stay in PyTorch")
        tanh_mlp = nn.Sequential(nn.Linear(64, 256), nn.GELU(approximate="tanh"), nn.Linear(256, 64))
        self.compiled_matches(tanh_mlp, torch.randn(32, 64), tol=F32_BLOCK)

    def test_bert_layer(self):
        layer = randomise(BertLayer()).eval()
        mask = torch.ones(2, 16)
        mask[1, 11:] = 0
        x = torch.randn(2, 16, 64)
        # Fused wherever it matches (the default fuses where measured faster).
        stats = self.compiled_matches(layer, x, mask, tol=F32_BLOCK, options={"attention": True})
        self.assertEqual(stats[0].attention, 1)  # the padding mask added: SDPA's attn_mask
        ops = [op for p in stats[0].partitions for op in p.ops]
        for op in ("aten.native_layer_norm.default", "aten.gelu.default"):
            self.assertIn(op, ops)
        # options={"attention": False}: the scores' scale, mask and softmax are Stitch's.
        torch._dynamo.reset()
        backend.reset_stats()
        stats = self.compiled_matches(layer, x, mask, tol=F32_BLOCK, options={"attention": False})
        self.assertEqual(stats[0].attention, 0)
        self.assertIn("aten._softmax.default", [op for p in stats[0].partitions for op in p.ops])

    def test_torch_transformer_encoder_layer(self):
        # Its fast path is one fused ATen op (_transformer_encoder_layer_fwd) that only
        # PyTorch runs; without it the layer is ATen ops Stitch partitions.
        enabled = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            layer = nn.TransformerEncoderLayer(64, 4, 256, dropout=0.0, activation="gelu", batch_first=True).eval()
            self.compiled_matches(randomise(layer), torch.randn(2, 16, 64), tol=F32_BLOCK)
        finally:
            torch.backends.mha.set_fastpath_enabled(enabled)

    def test_llama_block(self):
        # RMSNorm, rotary embedding (slices, a concat), grouped-query attention and SwiGLU.
        self.compiled_matches(randomise(LlamaBlock()), torch.randn(2, 16, 64), tol=F32_BLOCK)

    def test_f32_blocks_are_as_close_to_float64_as_eager(self):
        # Against the block run in float64: Stitch's f32 error at most twice eager's.
        for make in (GPT2Block, BertLayerWithMask, LlamaBlock):
            for seed in range(3):
                torch.manual_seed(seed)
                block = randomise(make())
                args = block.example_inputs() if hasattr(block, "example_inputs") else (torch.randn(2, 16, 64),)
                self.assert_as_close_to_float64_as_eager(block, args, f"{make.__name__} seed {seed}")

    def test_matrix_products_as_stitch_dots(self):
        # options={"dots": True}: mm, addmm and bmm join the partitions, the linear
        # layers' transposed weights read in place, bias and GELU as dot epilogues.
        mlp = randomise(nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)))
        stats = self.compiled_matches(mlp, torch.randn(32, 64), tol=F32_BLOCK, options={"dots": True})
        self.assertEqual(len(stats[0].partitions), 1)
        self.assertEqual(sum(stats[0].torch_ops.values()), 0, stats[0].torch_ops)
        torch._dynamo.reset()
        stats = self.compiled_matches(randomise(GPT2Block()), torch.randn(2, 16, 64), tol=F32_BLOCK,
                                      options={"dots": True})
        self.assertNotIn("aten.bmm.default", stats[0].torch_ops)
        self.assertNotIn("aten.addmm.default", stats[0].torch_ops)

    def test_matrix_products_where_measured_faster(self):
        # options={"dots": "auto"}: each product's problem is timed once under PyTorch and
        # Stitch, and the product joins a partition exactly where Stitch's was faster.
        from stitch import torch_products

        torch_products.reset()
        mlp = randomise(nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)))
        stats = self.compiled_matches(mlp, torch.randn(32, 64), tol=F32_BLOCK, options={"dots": "auto"})
        measured = torch_products.measurements
        self.assertEqual({key[1] for key in measured}, {((32, 64), (64, 256)), ((32, 256), (256, 64))})
        faster = sum(stitch_s <= torch_products.MARGIN * torch_s for torch_s, stitch_s in measured.values())
        self.assertEqual(products_in_torch(stats[0]), 2 - faster, (measured, stats[0]))
        # A second compile of the same problems measures nothing again.
        torch._dynamo.reset()
        before = dict(measured)
        self.compiled_matches(mlp, torch.randn(32, 64), tol=F32_BLOCK, options={"dots": "auto"})
        self.assertEqual(torch_products.measurements, before)
        # Both ways, whatever this machine measures: a margin nothing meets, one everything does.
        for margin, in_torch in ((0.0, 2), (1e9, 0)):
            torch_products.reset()
            torch._dynamo.reset()
            with mock.patch.object(torch_products, "MARGIN", margin):
                stats = self.compiled_matches(mlp, torch.randn(32, 64), tol=F32_BLOCK, options={"dots": "auto"})
            self.assertEqual(products_in_torch(stats[-1]), in_torch, stats[-1])
        # Another value is refused by name rather than read as a truth value.
        torch._dynamo.reset()
        with self.assertRaisesRegex(Exception, 'options\\["dots"\\] is \'fast\'; it takes True, False or "auto"'):
            torch.compile(mlp, backend="stitch", options={"dots": "fast"})(torch.randn(32, 64))

    def test_the_partitions_back_end_is_an_option(self):
        """options["backend"]: "cpu" (the default) or "cuda" (the partitions of CPU tensors
        compiled for the CUDA back end; test_torch_models.py runs the model set so on the
        simulated driver). Another value is refused by name, and "cuda" where this Stitch
        cannot compile for CUDA is refused with the reason, before anything is traced."""
        f = lambda x: (x * 2).exp()  # noqa: E731
        stats = self.compiled_matches(f, torch.randn(8, 4), options={"backend": "cpu"})
        self.assertEqual([p.backend for p in stats[0].partitions], ["cpu"])
        torch._dynamo.reset()
        with self.assertRaisesRegex(Exception, 'options\\["backend"\\] is \'tpu\'; it takes "cpu" or "cuda"'):
            torch.compile(f, backend="stitch", options={"backend": "tpu"})(torch.randn(8, 4))
        if not backend.cuda_available():
            torch._dynamo.reset()
            with self.assertRaisesRegex(Exception, 'options\\["backend"\\] is "cuda", and this Stitch cannot compile '
                                        "for CUDA here"):
                torch.compile(f, backend="stitch", options={"backend": "cuda"})(torch.randn(8, 4))

    def test_gpt2_block(self):
        block = randomise(GPT2Block()).eval()
        stats = self.compiled_matches(block, torch.randn(2, 16, 64), tol=F32_BLOCK, options={"attention": True})
        self.assertGreaterEqual(len(stats[0].partitions), 3)
        # The attention (scores, scale, causal mask, softmax, times V) is one fused call.
        self.assertEqual(stats[0].attention, 1)
        self.assertEqual(stats[0].torch_ops["aten.scaled_dot_product_attention.default"], 1)
        self.assertNotIn("aten.bmm.default", stats[0].torch_ops)


def op_soup(x, y, idx):
    """Most of the ops the lowering maps, on floats of any dtype."""
    clamps = torch.clamp(x, -0.5, 0.7) + torch.clamp_min(y, 0.1) * torch.clamp_max(x, 0.2) + F.hardtanh(x)
    selects = torch.where(x > y, x.exp(), y.sigmoid()) - torch.tanh(x) / (y.abs() + 1)
    powers = (x.pow(2) + y.pow(3) + (x.abs() + 1).pow(0.5) + (y.abs() + 1).pow(-0.5) + (x.abs() + 1).pow(-1)
              + (x.abs() + 1).pow(-2) + x.abs().pow(1.7) + x.pow(0) + x.pow(1))
    unary = (torch.erf(x) + torch.log1p(x.abs()) + torch.expm1(y) + torch.sin(x) * torch.cos(y) + torch.floor(x)
             + torch.ceil(y) + torch.round(x * 3) + torch.sign(y) + torch.rsqrt(x.abs() + 1)
             + (y.abs() + 1).reciprocal() + torch.log(x.abs() + 1) + torch.log2(y.abs() + 1) + torch.exp2(x)
             + torch.sqrt(y.abs()) + torch.relu(x) + F.silu(y))
    reductions = (x.sum(-1) + x.mean(0).sum() + x.amax(-1) - x.amin(-1) + x.var(-1) + x.std(-1, correction=0)
                  + x.sum())
    softmaxes = torch.log_softmax(x, -1) + torch.logsumexp(y, -1, keepdim=True)
    layout = (torch.cat([x, y], 1)[:, 3:40:2] * 2, F.pad(x, (1, 2)) + 1, x[2] * y[3],
              torch.split(x, 10, dim=1)[1] * 2, x.t() * 3, x.unbind(0)[3] + 1,
              (x * y).unsqueeze(1).expand(-1, 3, -1).reshape(x.shape[0] * 3, -1) + 1)
    indices = (x.argmax(-1), x.max(-1).values, x.max(-1).indices, x.min(0).values, x.argmin(),
               x.index_select(0, idx) * 2, F.embedding(idx, y) * 2,
               torch.gather(x, 1, (x.abs() * 10).long().clamp(max=47)) * 2,
               torch.gather(y, 0, (y.abs() * 10).long()[:5].clamp(max=15)),
               x.scatter(1, (y.abs() * 10).long()[:, :1].clamp(max=47), -1.5))
    binary = (torch.maximum(x, y), torch.minimum(x, y), torch.atan2(x, y), torch.fmod(x, 0.3), 1 - x)
    sources = (torch.arange(x.shape[1]) * 2 + x, torch.full_like(x, 3) * y, torch.zeros_like(x) + y)
    logic = ((x > 0).float() + (x < y).to(torch.float64), torch.isnan(x / y.abs()),
             torch.logical_and(x > 0, y > 0), torch.logical_not(x > 0), (x > 0).logical_xor(y > 0))
    return (clamps, selects, powers, unary, reductions, softmaxes, *layout, *indices, *binary, *sources, *logic,
            *torch.var_mean(x, 0))


def integer_soup(a, b):
    nonzero = b.abs() + 1
    return (a + b * 3, torch.div(a, nonzero, rounding_mode="trunc"), torch.fmod(a, 7), a.abs(), -a,
            torch.maximum(a, b), a.sum(-1), (a > b) & (a < 5), ~(a > 0), a.to(torch.float32) / 3, a.exp(),
            torch.bitwise_and(a, b), a ^ b, (a == b).any(-1), (a != b).all(-1), a.argmin(-1),
            torch.where(a > 0, a, b), a / nonzero, a.float().mean(), a.to(torch.int32) * 2, a.sum(),
            (a > 0).sum(-1), a * 2.5, a.clamp(-3, 3), a.floor())


class Ops(StitchCase):
    """One graph per dtype holding most mapped ops: one partition, compiled once."""

    def setUp(self):
        super().setUp()
        self.x, self.y = torch.randn(16, 48), torch.randn(16, 48)
        self.idx = torch.tensor([3, 1, 4, 1, 5])

    def test_f32(self):
        stats = self.compiled_matches(op_soup, self.x, self.y, self.idx)
        self.assertEqual(len(stats[0].partitions), 1)
        self.assertEqual(sum(stats[0].torch_ops.values()), 0, stats[0].torch_ops)

    def test_f64(self):
        self.compiled_matches(op_soup, self.x.double(), self.y.double(), self.idx, tol=F64)

    # Half precision as eager rounds it, op by op: floor, round and sign of a value
    # kept in f32 (the default, test_f32_intermediates_...) can land an integer away
    # from eager's of the rounded value.
    EAGER_ROUNDING = {"options": {"f32_intermediates": False}}

    def test_f16(self):
        self.compiled_matches(op_soup, self.x.half(), self.y.half(), self.idx, tol=F16, **self.EAGER_ROUNDING)

    def test_numbers_with_half_tensors_round_as_pytorch_does(self):
        # PyTorch rounds a number to the f16/bf16 tensor's dtype for add, sub, fmod and
        # comparisons, and keeps it in float for mul and div: bit for bit.
        def f(t):
            return t + 0.3, t - 0.3, torch.fmod(t, 0.3), t > 0.3, t * 0.3, t / 0.3

        x = torch.randn(64, 256)
        for dtype in (torch.float16, torch.bfloat16):
            self.compiled_matches(f, x.to(dtype), tol=dict(rtol=0, atol=0))
            torch._dynamo.reset()

    def test_f32_intermediates_stay_closer_to_float64_than_eager(self):
        # x * 300 - (x * 300 - x) is x in exact arithmetic; eager rounds the bf16
        # products and differences (an ulp of 300 is 2), f32 intermediates do not.
        def f(t):
            return torch.softmax(t * 300.0 - (t * 300.0 - t), dim=-1)

        x = torch.randn(16, 48).bfloat16()
        with torch.inference_mode():
            exact = torch.softmax(x.double(), dim=-1)
            eager = f(x)
            rounded = torch.compile(f, backend="stitch", options={"f32_intermediates": False})(x)
            torch._dynamo.reset()
            got = torch.compile(f, backend="stitch")(x)
        self.assert_stitch_ran()
        self.assertEqual(got.dtype, torch.bfloat16)
        eager_error = (eager.double() - exact).abs().max().item()
        self.assertLess((got.double() - exact).abs().max().item(), eager_error / 4)
        torch.testing.assert_close(rounded, eager, **BF16)
        torch._dynamo.reset()
        with self.assertRaisesRegex(Exception, 'options\\["f32_intermediates"\\] is .yes.; it takes True or False'):
            torch.compile(f, backend="stitch", options={"f32_intermediates": "yes"})(x)

    def test_bf16(self):
        stats = self.compiled_matches(op_soup, self.x.bfloat16(), self.y.bfloat16(), self.idx, tol=BF16,
                                      **self.EAGER_ROUNDING)
        self.assertEqual(sum(stats[0].torch_ops.values()), 0, stats[0].torch_ops)

    def test_integers(self):
        # Every output exactly, but a.exp() (output 10): a float32 transcendental, which
        # the compiled back ends compute with the vector math library, a few ulp from the
        # correctly rounded value (docs/semantics.md). Compared bit for bit, this failed
        # on 2026-12-01 with torch 2.15.0 from pip, whose eager exp was correctly rounded
        # where the CPU kernels' vector expf is 1 ulp off (exp(4), exp(13), exp(-17)).
        a, b = torch.randint(-20, 20, (8, 16)), torch.randint(-20, 20, (8, 16))
        exact = dict(rtol=0, atol=0)
        self.compiled_matches(integer_soup, a, b, tol=exact, tol_of={10: F32})
        self.compiled_matches(integer_soup, a.int(), b.int(), tol=exact, tol_of={10: F32})


class Behaviour(StitchCase):
    def test_matrix_products_only_run_in_pytorch(self):
        compiled = torch.compile(lambda a, b: a @ b, backend="stitch")
        a, b = torch.randn(8, 8), torch.randn(8, 8)
        torch.testing.assert_close(compiled(a, b), a @ b)
        self.assertEqual(backend.last_stats().partitions, [])
        self.assertEqual(backend.last_stats().kernel_count, 0)

    def test_a_fill_shared_by_partitions_is_each_ones_constant(self):
        # One torch.full read by two partitions that a product separates: each takes
        # it as a constant of its own, not as an input tensor from PyTorch.
        def f(x, w):
            floor = torch.full((16, 16), -0.5)
            y = torch.maximum(x, floor).exp()
            return torch.maximum(y @ w, floor).exp()

        stats = self.compiled_matches(f, torch.randn(16, 16), torch.randn(16, 16))
        partitions = stats[-1].partitions
        self.assertEqual(len(partitions), 2)
        for p in partitions:
            header = p.text.splitlines()[0]
            self.assertEqual(header.count(": f32["), 1, f"{p.name} takes the fill as an input: {header}")
            self.assertIn("constant(", p.text)

    def test_a_bias_joins_the_partition_that_computes_on_the_product(self):
        # Linear layers with biases (addmm): the one a GELU reads becomes mm + the add,
        # which joins the GELU's partition; the one only views and a product read
        # stays addmm, and so does a bf16 one (one rounding, as eager's).
        torch.manual_seed(0)
        up, down, side = torch.nn.Linear(32, 64), torch.nn.Linear(64, 32), torch.nn.Linear(32, 16)

        def f(x):
            h = torch.nn.functional.gelu(up(x))
            return down(h), side(x).view(4, 4, 16) @ torch.ones(16, 2)

        x = torch.randn(4, 4, 32)
        for split in (True, False):
            previous, backend.split_bias = backend.split_bias, split
            try:
                torch._dynamo.reset()
                stats = self.compiled_matches(f, x)[-1]
            finally:
                backend.split_bias = previous
            texts = "\n".join(p.text for p in stats.partitions)
            if split:
                # up's bias joins the GELU; down's (the graph's output) and side's (a view
                # into a product) have no partition to join.
                self.assertEqual(stats.bias_adds, 1)
                self.assertEqual(stats.torch_ops["aten.addmm.default"], 2, stats)
                self.assertEqual(stats.torch_ops["aten.mm.default"], 2, stats)  # up's, and the product's
                self.assertRegex(texts, r"= add\(mm[^,]*, [^)]*\)\n.*\n?.*gelu\(", texts)
            else:
                self.assertEqual(stats.bias_adds, 0)
                self.assertEqual(stats.torch_ops["aten.addmm.default"], 3, stats)
                self.assertEqual(stats.torch_ops["aten.mm.default"], 1, stats)
                self.assertNotIn("add(", texts)
        torch._dynamo.reset()
        half = copy.deepcopy(up).bfloat16()
        stats = self.compiled_matches(lambda x: torch.nn.functional.gelu(half(x)), x.bfloat16(), tol=BF16)
        self.assertEqual(stats[-1].bias_adds, 0)
        # A whole [M, F] matrix as addmm's input: split, its add stays in front of the
        # reshape, where it broadcasts.
        torch._dynamo.reset()
        c, w = torch.randn(16, 64), torch.randn(32, 64)
        stats = self.compiled_matches(lambda x: torch.addmm(c, x.view(16, 32), w).view(4, 4, 64).exp(), x)
        self.assertEqual(stats[-1].bias_adds, 1)
        # A product read through a view and at its own shape (as a training graph
        # saves it for the backward): one add, which both read (an add behind the view
        # as well read the product twice).
        torch._dynamo.reset()

        def saved(x):
            y = up(x)
            return torch.nn.functional.gelu(y.view(4, 4, 64)), y

        stats = self.compiled_matches(saved, x.view(16, 32))[-1]
        self.assertEqual(stats.bias_adds, 1)
        self.assertEqual(sum(p.text.count("= add(") for p in stats.partitions), 1, stats)

    def test_a_permuted_input_is_read_where_it_lies(self):
        # ViT's heads in a training step with attention unfused: a product's output
        # viewed as [B, T, 3, heads, d] and permuted to [3, B, heads, T, d] reaches a
        # partition that PyTorch's bmm also reads. Without layout copies in Stitch, the partition takes the memory
        # as it lies (declared [B, T, 3, heads, d]) and transposes it in the graph, so
        # no copy makes it contiguous. With them (the default), the backward's copy of
        # k transposed is a partition of its own, with its own copy of the views, and
        # the attention's partition reads the product's output itself: no copy either.
        lin = randomise(nn.Linear(64, 3 * 64))

        def f(x):
            qkv = lin(x).view(2, 17, 3, 4, 16).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            return (q @ k.transpose(-2, -1) * 0.25).softmax(-1) @ v

        x = torch.randn(2, 17, 64)
        contiguous = torch.Tensor.contiguous
        for layout_copies, declared in ((False, "f32[2, 17, 3, 4, 16]"), (True, "addmm: f32[2, 17, 192]")):
            torch._dynamo.reset()
            backend.reset_stats()
            lin.zero_grad()
            copies = []

            def counted(t, *args, **kwargs):
                if not t.is_contiguous():
                    copies.append(tuple(t.shape))
                return contiguous(t, *args, **kwargs)

            got_x = x.clone().requires_grad_()
            with mock.patch.object(torch.Tensor, "contiguous", counted), \
                    mock.patch.object(backend, "layout_copies", layout_copies):
                # Attention unfused (it would be PyTorch's fused call, no partition).
                got = torch.compile(f, backend="stitch", options={"attention": False})(got_x)
                got.square().mean().backward()
            got_grads = [got_x.grad] + [p.grad.clone() for p in lin.parameters()]
            lin.zero_grad()
            want_x = x.clone().requires_grad_()
            want = f(want_x)
            want.square().mean().backward()
            torch.testing.assert_close(got, want, **F32_BLOCK)
            for g, w in zip(got_grads, [want_x.grad] + [p.grad for p in lin.parameters()]):
                torch.testing.assert_close(g, w, **F32_BLOCK)
            forward = [s for s in self.assert_stitch_ran() if s.kind == "forward"]
            headers = [p.text.splitlines()[0] for p in forward[0].partitions]
            self.assertTrue(any(declared in h for h in headers), headers)
            # No partition reads the heads as a tensor another partition wrote.
            self.assertFalse(any("f32[3, 2, 4, 17, 16]" in h for h in headers), headers)
            self.assertNotIn((3, 2, 4, 17, 16), copies)

    def test_a_layout_copy_runs_where_measured_faster(self):
        # A product's output split into heads with the innermost axis moved and made
        # contiguous for the next product: views and a clone, a copy into another
        # layout. The partition is timed under both on its first call and runs where
        # faster; either way the result is eager's. A clone of a contiguous tensor is
        # a plain copy and stays PyTorch's, no partition made for it.
        w = torch.randn(64, 64)

        def heads(x):
            y = (x @ w).view(4, 16, 4, 16).permute(0, 2, 3, 1).contiguous()
            return y.view(64, 64) @ w

        stats = self.compiled_matches(heads, torch.randn(64, 64))
        copies = [p for s in stats for p in s.partitions]
        self.assertEqual(len(copies), 1, stats)
        self.assertIn("aten.clone.default", copies[0].ops)
        stitch_s, torch_s = copies[0].copies_timed
        self.assertGreater(stitch_s, 0.0)
        self.assertGreater(torch_s, 0.0)

        torch._dynamo.reset()
        backend.reset_stats()
        plain = torch.compile(lambda x: (x @ w).clone() @ w, backend="stitch")
        with torch.inference_mode():
            x = torch.randn(64, 64)
            torch.testing.assert_close(plain(x), (x @ w) @ w, **F32)
        stats = backend.all_stats()
        self.assertEqual([p for s in stats for p in s.partitions], [])
        self.assertEqual(stats[0].torch_ops["aten.clone.default"], 1)

    def test_products_write_into_outputs_nothing_holds(self):
        # Under keep_products, a product PyTorch runs between partitions writes into a
        # kept output, never into one a caller still holds.
        from stitch import torch_products

        calls = []
        forward = torch_products.KeptProduct.forward

        def counted(module, *args, **kwargs):
            calls.append(module.op)
            return forward(module, *args, **kwargs)

        torch_products.KeptProduct.__call__ = counted
        try:
            compiled = torch.compile(lambda x, w: x.exp() @ w, backend="stitch", options={"keep_products": True})
            # A 4 MiB output: smaller ones are left to PyTorch's allocator.
            w = torch.randn(16, 1024)
            a, b = torch.randn(1024, 16), torch.randn(1024, 16)
            with torch.inference_mode():
                first = compiled(a, w)
                held = first.clone()
                second = compiled(b, w)
                torch.testing.assert_close(first, held)  # not overwritten while held
                torch.testing.assert_close(second, b.exp() @ w)
                del first
                third = compiled(a, w)
                torch.testing.assert_close(third, a.exp() @ w)
                torch.testing.assert_close(second, b.exp() @ w)
        finally:
            torch_products.KeptProduct.__call__ = forward
        self.assertEqual(calls, [torch.mm] * 3)
        # Another value is refused by name.
        torch._dynamo.reset()
        with self.assertRaisesRegex(Exception, 'options\\["keep_products"\\] is \'yes\'; it takes True or False'):
            torch.compile(lambda x: x.exp() @ x, backend="stitch", options={"keep_products": "yes"})(torch.randn(4, 4))

    def test_unsupported_dtypes_run_in_pytorch(self):
        compiled = torch.compile(lambda t: t * 3 + 1, backend="stitch")
        x = torch.randint(-5, 5, (8, 8), dtype=torch.int16)
        backend._warned.clear()
        with self.assertWarnsRegex(UserWarning, r"PyTorch runs aten.mul.Tensor \(dtype torch.int16 has no Stitch"):
            torch.testing.assert_close(compiled(x), x * 3 + 1)
        with warnings.catch_warnings():  # once per process, not per graph
            warnings.simplefilter("error")
            torch._dynamo.reset()
            torch.compile(lambda t: t * 5, backend="stitch")(x)
        self.assertEqual(backend.last_stats().partitions, [])
        self.assertTrue(any("int16" in r for r in backend.last_stats().refusals))

    def test_a_partition_stitch_cannot_compile_runs_in_pytorch(self):
        real = backend._compile_text

        def failing(*args, **kwargs):
            raise stitch.Error("error: refused for the test")

        backend._compile_text = failing
        try:
            compiled = torch.compile(lambda t: torch.tanh(t) + 1, backend="stitch")
            x = torch.randn(4, 4)
            with self.assertWarnsRegex(UserWarning, "runs in PyTorch"):
                y = compiled(x)
            torch.testing.assert_close(y, torch.tanh(x) + 1)
            self.assertIn("refused for the test", backend.last_stats().partitions[0].fallback)
        finally:
            backend._compile_text = real

    def test_generated_text_is_kept_and_dumped(self):
        dump = tempfile.mkdtemp(prefix="stitch-torch-dump-")
        os.environ["STITCH_TORCH_DUMP"] = dump
        try:
            self.compiled_matches(lambda t: torch.sigmoid(t) * t, torch.randn(4, 8))
        finally:
            del os.environ["STITCH_TORCH_DUMP"]
        text = backend.last_stats().partitions[0].text
        self.assertIn("sigmoid(", text)
        files = os.listdir(dump)
        self.assertEqual(len(files), 1)
        with open(os.path.join(dump, files[0])) as f:
            self.assertEqual(f.read(), text)
        shutil.rmtree(dump)
        # The text parses back into the graph that ran.
        name = files[0][: -len(".stitch")]
        self.assertEqual(stitch.parse(text).graphs[name].name, name)

    def test_new_shapes_compile_new_specialisations(self):
        compiled = torch.compile(lambda t: F.layer_norm(t, t.shape[-1:]), backend="stitch", dynamic=False)
        for rows in (3, 7, 7):
            x = torch.randn(rows, 32)
            torch.testing.assert_close(compiled(x), F.layer_norm(x, (32,)), **F32)
        self.assert_stitch_ran()
        partitions = [p for s in backend.all_stats() for p in s.partitions]
        self.assertEqual(sum(p.specialisations for p in partitions), 2)
        self.assertEqual(sum(p.calls for p in partitions), 3)

    def test_dynamic_shapes_compile_each_partition_once(self):
        # Dynamo's size symbols become Stitch symbols: one executable per partition runs
        # every batch size and sequence length (the causal mask and the rotary tables
        # cut to the length as symbolic prefixes), by address and through numpy.
        for by_address in (True, False):
            for make in (lambda: GPT2Block(context=32), lambda: LlamaBlock(context=32)):
                torch._dynamo.reset()
                backend.reset_stats()
                backend.by_address = by_address
                try:
                    block = randomise(make())
                    compiled = torch.compile(block, backend="stitch", dynamic=True)
                    for b, t in ((3, 7), (5, 9), (2, 16), (4, 20), (5, 9)):  # not 1: Dynamo specialises it
                        x = torch.randn(b, t, 64)
                        with torch.inference_mode():
                            torch.testing.assert_close(compiled(x), block(x), **F32_BLOCK)
                finally:
                    backend.by_address = True
                stats = self.assert_stitch_ran()
                self.assertEqual(len(stats), 1, "Dynamo compiled the block more than once")
                for p in stats[0].partitions:
                    self.assertTrue(p.symbolic, f"{p.name}: {p.static_because}")
                    self.assertEqual((p.specialisations, p.calls), (1, 5), p.name)

    def test_a_training_step_under_dynamic_shapes(self):
        # The backward too; a partition that needs a product of sizes (a bias gradient
        # summing a [B*T, C] matrix) is compiled per shapes and says why.
        block = randomise(GPT2Block(context=32))
        compiled = torch.compile(block, backend="stitch", dynamic=True)
        for b, t in ((3, 7), (2, 12)):
            x = torch.randn(b, t, 64, requires_grad=True)
            compiled(x).square().mean().backward()
            got = [p.grad.clone() for p in block.parameters()] + [x.grad.clone()]
            block.zero_grad()
            x.grad = None
            block(x).square().mean().backward()
            for g, w in zip(got, [p.grad for p in block.parameters()] + [x.grad]):
                torch.testing.assert_close(g, w, **F32_BLOCK)
            block.zero_grad()
        stats = {s.kind: s for s in self.assert_stitch_ran()}
        self.assertTrue(all(p.symbolic for p in stats["forward"].partitions))
        for p in stats["backward"].partitions:
            self.assertTrue(p.symbolic or (p.static_because and p.specialisations == 2), p)

    def test_outputs_are_reused_only_when_nothing_holds_them(self):
        compiled = torch.compile(lambda t: torch.tanh(t) * 2, backend="stitch")
        x1, x2 = torch.randn(64, 64), torch.randn(64, 64)
        with torch.inference_mode():
            y1 = compiled(x1)
            view = y1[3:]                   # a view keeps the memory alive
            del y1
            y2 = compiled(x2)
            self.assertNotEqual(y2.data_ptr(), view.data_ptr() - 3 * 64 * 4)
            torch.testing.assert_close(view, (torch.tanh(x1) * 2)[3:], **F32)
            address = y2.data_ptr()
            del y2, view
            y3 = compiled(x1)               # nothing holds the last output: written into it
            self.assertEqual(y3.data_ptr(), address)
            torch.testing.assert_close(y3, torch.tanh(x1) * 2, **F32)
            z = compiled(x2)                # y3 is alive: fresh memory
            self.assertNotEqual(z.data_ptr(), y3.data_ptr())
            torch.testing.assert_close(y3, torch.tanh(x1) * 2, **F32)
            torch.testing.assert_close(z, torch.tanh(x2) * 2, **F32)
            # `y = compiled(x)` in a loop holds the last y during the next call: the
            # calls alternate between two sets of outputs instead of taking fresh memory.
            del y3, z
            addresses = set()
            y = compiled(x1)
            for i in range(6):
                x = x2 if i % 2 == 0 else x1
                y = compiled(x)
                torch.testing.assert_close(y, torch.tanh(x) * 2, **F32)
                addresses.add(y.data_ptr())
            self.assertEqual(len(addresses), 2)

    def test_profiling_times_the_call_the_partition_makes_anyway(self):
        # Under profiling() a partition's common call is the PlainCall of every other
        # call, timed whole: it writes into the same kept outputs (no other path with
        # sets of its own, which made a partition's time in a model up to twice its
        # time outside profiling()), and each call counts once.
        compiled = torch.compile(lambda t: torch.tanh(t) * 2, backend="stitch")
        x = torch.randn(64, 64)
        with torch.inference_mode():
            compiled(x)
            with backend.profiling():
                for _ in range(3):
                    y = compiled(x)
                    torch.testing.assert_close(y, torch.tanh(x) * 2, **F32)
                    address = y.data_ptr()
                    del y
            y = compiled(x)
            self.assertEqual(y.data_ptr(), address)
        (partition,) = self.assert_stitch_ran()[0].partitions
        self.assertEqual(partition.timed_calls, 3)
        self.assertGreater(partition.seconds["stitch"], 0)
        self.assertEqual(partition.seconds["arguments"], 0)
        self.assertEqual(partition.seconds["results"], 0)

    def test_the_plain_call_runs_only_into_a_free_set_of_contiguous_memory(self):
        # stitch._stitch.PlainCall, the common partition call in one step: None (the
        # caller's general way) for an argument that is not contiguous or when no kept
        # set is free; never writes into memory a caller holds.
        g = stitch.parse("graph g(a: f32[4, 8], b: f32[4, 8]) {\n  s = add(a, b)\n  p = mul(a, b)\n"
                         "  return s, p\n}\n").graphs["g"]
        call = stitch._stitch.PlainCall(stitch.compile(g, cache_dir=_cache), [2, 1], torch._C._storage_Use_Count, 1)
        a, b = torch.randn(4, 8), torch.randn(4, 8)
        self.assertIsNone(call(("unused", b, a)))  # no kept set yet
        call.adopt([torch.empty(4, 8), torch.empty(4, 8)])
        s, p = call(("unused", b, a))              # positions 2 and 1 are a and b
        torch.testing.assert_close(s, a + b, **F32)
        torch.testing.assert_close(p, a * b, **F32)
        self.assertIsNone(call(("unused", b, a)))  # s and p hold the only set
        del s
        self.assertIsNone(call(("unused", b, a)))  # p still does
        del p
        self.assertIsNone(call(("unused", b, torch.randn(8, 4).t())))  # not contiguous
        s, p = call(("unused", b * 2, a))
        torch.testing.assert_close(p, a * b * 2, **F32)
        del s, p
        call.adopt([torch.empty(4, 8), torch.empty(4, 8)])  # keep=1: the older set goes
        self.assertEqual(call.kept, 1)
        with self.assertRaisesRegex(stitch.Error, "PlainCall.adopt: 1 tensors for 2 outputs"):
            call.adopt([torch.empty(4, 8)])
        with self.assertRaisesRegex(stitch.Error, "PlainCall: argument 2 of 1"):
            call((a,))
        with self.assertRaisesRegex(stitch.Error, "PlainCall: 1 argument positions for a graph of 2 parameters"):
            stitch._stitch.PlainCall(stitch.compile(g, cache_dir=_cache), [0], torch._C._storage_Use_Count)

    def test_both_boundaries_on_one_specialisation(self):
        # By address (the default) and through numpy (by_address off, as CUDA and the
        # benchmark's comparison go) alternate on the same compiled partition.
        compiled = torch.compile(lambda t: torch.tanh(t) * 2, backend="stitch")
        x = torch.randn(64, 64)
        kept = []
        try:
            with torch.inference_mode():
                for i in range(6):
                    backend.by_address = i % 2 == 0
                    kept.append(compiled(x))
                    torch.testing.assert_close(kept[-1], torch.tanh(x) * 2, **F32)
        finally:
            backend.by_address = True
        for y in kept:
            torch.testing.assert_close(y, torch.tanh(x) * 2, **F32)

    def test_training_runs_forward_and_backward_through_stitch(self):
        model = nn.Sequential(nn.Linear(32, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 4))
        x = torch.randn(16, 32)
        compiled = torch.compile(model, backend="stitch")
        compiled(x).square().sum().backward()
        got = [p.grad.clone() for p in model.parameters()]
        model.zero_grad()
        model(x).square().sum().backward()
        for g, w in zip(got, [p.grad for p in model.parameters()]):
            torch.testing.assert_close(g, w, **F32_BLOCK)
        kinds = {s.kind: s for s in self.assert_stitch_ran()}
        self.assertGreater(kinds["forward"].kernel_count, 0)
        self.assertGreater(kinds["backward"].kernel_count, 0)
        # The layer norm and GELU backward are Stitch's; PyTorch keeps the matrix products.
        self.assertEqual(set(kinds["backward"].torch_ops) - {"aten.mm.default", "aten.t.default",
                                                               "aten.view.default", "aten.permute.default"}, set(),
                         kinds["backward"].torch_ops)

    def test_bias_and_norm_gradients_join_the_partitions_they_read(self):
        # The partitioner puts the backward's gradient sums behind the matrix products,
        # in a partition of their own that reads their operands from memory again; they
        # belong beside the layer norm's and the GELU's backward, which compute them.
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.up, self.down, self.norm = nn.Linear(32, 64), nn.Linear(64, 32), nn.LayerNorm(32)

            def forward(self, x):
                return self.norm(x + self.down(F.gelu(self.up(x))))

        block = randomise(Block())
        x = torch.randn(4, 8, 32)
        torch.compile(block, backend="stitch")(x).square().mean().backward()
        got = [p.grad.clone() for p in block.parameters()]
        block.zero_grad()
        block(x).square().mean().backward()
        for g, w in zip(got, [p.grad for p in block.parameters()]):
            torch.testing.assert_close(g, w, **F32_BLOCK)
        backward = [s for s in self.assert_stitch_ran() if s.kind == "backward"][0]
        sums = {"aten.sum.dim_IntList", "aten.sum.default"}
        self.assertEqual(len(backward.partitions), 2, [p.ops for p in backward.partitions])
        for p in backward.partitions:
            self.assertTrue(sums & set(p.ops), p.ops)
            self.assertIn("aten.mul.Tensor", p.ops)

    def test_training_steps_of_blocks_match_eager_gradients(self):
        # The Llama block's backward has slice_scatter (the rotary slices' gradients).
        for make in (GPT2Block, BertLayerWithMask, LlamaBlock):
            torch._dynamo.reset()
            backend.reset_stats()
            block = randomise(make())
            args = block.example_inputs() if hasattr(block, "example_inputs") else (torch.randn(2, 16, 64),)
            x = args[0].clone().requires_grad_()
            torch.compile(block, backend="stitch")(x, *args[1:]).square().mean().backward()
            got = [p.grad.clone() for p in block.parameters()] + [x.grad.clone()]
            block.zero_grad()
            x.grad = None
            block(x, *args[1:]).square().mean().backward()
            eager = [p.grad for p in block.parameters()] + [x.grad]
            exact = float64_gradients(block, args)
            for i, (g, w, e) in enumerate(zip(got, eager, exact)):
                # The gradients reach thousands (the Llama block's), where a few f32 ulp
                # of a sum exceed 1e-3 on its small elements, eager's as much as Stitch's:
                # each gradient is held to the float64 one (docs/torch.md, Tolerances).
                # The key bias's is zero but for rounding (softmax ignores a shift).
                stitch_error = (g.double() - e).abs().max().item()
                eager_error = (w.double() - e).abs().max().item()
                bound = 2 * eager_error + 1e-5 * max(e.abs().max().item(), 1.0)
                self.assertLessEqual(stitch_error, bound, f"{make.__name__} gradient {i}: Stitch {stitch_error}, "
                                     f"eager {eager_error} from float64")
            stats = self.assert_stitch_ran()
            backward = [s for s in stats if s.kind == "backward"]
            self.assertTrue(backward and backward[0].kernel_count > 0, make.__name__)
            self.assertEqual(backward[0].refusals.get("no lowering for aten.slice_scatter.default", 0), 0)

    def test_attention_written_out_becomes_one_fused_call(self):
        def scaled_mul(q, k, v, bias, cond):
            return ((q @ k.transpose(-2, -1) * 0.3).softmax(-1) @ v).tanh()  # a Stitch kernel too

        def scaled_div_bias(q, k, v, bias, cond):
            return (((q @ k.transpose(-1, -2)) / 3.0 + bias).softmax(-1) @ v).tanh()

        def masked_fill(q, k, v, bias, cond):
            return (q @ k.transpose(-2, -1)).masked_fill(cond, float("-inf")).softmax(dim=3) @ v

        def kept_where(q, k, v, bias, cond):
            return torch.where(~cond, q @ k.transpose(-2, -1), float("-inf")).softmax(-1) @ v  # keeps ~cond

        def probabilities_too(q, k, v, bias, cond):  # the softmax has another user: not fused
            p = (q @ k.transpose(-2, -1)).softmax(-1)
            return p @ v, p

        def finite_fill(q, k, v, bias, cond):  # -1e9, not -inf: not the same as a mask
            return (q @ k.transpose(-2, -1)).masked_fill(cond, -1e9).softmax(-1) @ v

        q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 4)
        bias = torch.randn(2, 1, 1, 7)
        cond = torch.rand(1, 1, 5, 7) > 0.6
        cond[..., 0] = False  # no row all masked
        for fn, fused in ((scaled_mul, 1), (scaled_div_bias, 1), (masked_fill, 1), (kept_where, 1),
                          (probabilities_too, 0), (finite_fill, 0)):
            with self.subTest(fn.__name__):
                torch._dynamo.reset()
                backend.reset_stats()
                stats = self.compiled_matches(fn, q, k, v, bias, cond, tol=F32_BLOCK, options={"attention": True})
                self.assertEqual(stats[0].attention, fused)

    def test_attention_in_training_is_the_fused_kernel_forward_and_backward(self):
        # Fused in Dynamo's graph, before AOTAutograd: the forward runs PyTorch's fused
        # attention and the backward its fused backward; the gradients match eager's.
        def scaled_div_bias(q, k, v, bias, cond):
            return (((q @ k.transpose(-1, -2)) / 3.0 + bias).softmax(-1) @ v).tanh()

        def masked_fill(q, k, v, bias, cond):
            return (0.3 * (q @ k.transpose(-2, -1))).masked_fill(cond, float("-inf")).softmax(dim=3) @ v

        def kept_where(q, k, v, bias, cond):
            return torch.where(~cond, q @ k.transpose(-2, -1), float("-inf")).softmax(-1) @ v

        def filled_where(q, k, v, bias, cond):
            return F.softmax(torch.where(cond, float("-inf"), q @ k.permute(0, 1, 3, 2)), dim=-1) @ v

        def probabilities_too(q, k, v, bias, cond):  # the probabilities are an output: not fused
            p = (q @ k.transpose(-2, -1)).softmax(-1)
            return p @ v, p

        def bias_with_gradient(q, k, v, bias, cond):  # the fused backward gives the mask none
            return (q @ k.transpose(-2, -1) + bias).softmax(-1) @ v

        cases = ((scaled_div_bias, 1, False), (masked_fill, 1, False), (kept_where, 1, False),
                 (filled_where, 1, False), (probabilities_too, 0, False), (bias_with_gradient, 0, True))
        for fn, fused, bias_grad in cases:
            with self.subTest(fn.__name__):
                torch._dynamo.reset()
                backend.reset_stats()
                q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8)
                bias = torch.randn(2, 1, 1, 7).requires_grad_(bias_grad)
                cond = torch.rand(1, 1, 5, 7) > 0.6
                cond[..., 0] = False  # no row all masked
                leaves = [t.requires_grad_() for t in (q, k, v)] + ([bias] if bias_grad else [])
                grads = []
                for run in (torch.compile(fn, backend="stitch", options={"attention": True}), fn):
                    out = run(q, k, v, bias, cond)
                    out = out if isinstance(out, tuple) else (out,)
                    grads.append([o.detach() for o in out] +
                                 list(torch.autograd.grad(sum(o.square().sum() for o in out), leaves)))
                for i, (g, w) in enumerate(zip(*grads)):
                    torch.testing.assert_close(g, w, **F32_BLOCK, msg=lambda m, i=i: f"{fn.__name__} {i}: {m}")
                kinds = {s.kind: s for s in backend.all_stats()}
                self.assertEqual(kinds["forward"].attention, fused)
                flash = "aten._scaled_dot_product_flash_attention_for_cpu"
                self.assertEqual(kinds["forward"].torch_ops[flash + ".default"], fused)
                self.assertEqual(kinds["backward"].torch_ops[flash + "_backward.default"], fused)
                self.assertEqual(kinds["backward"].torch_ops["aten.bmm.default"], 0 if fused else 4)

    def test_attention_in_training_fused_where_measured_faster(self):
        # The default ("auto"): each attention's problem timed once per process, fused
        # and written out; fused unless written out took at most MARGIN of its time
        # (near level, fused); either way the gradients are eager's.
        from stitch import torch_attention_choice as choice

        def causal(q, k, v, cond):
            return ((q @ k.transpose(-2, -1)) * 0.3).masked_fill(cond, float("-inf")).softmax(-1) @ v

        cond = torch.ones(16, 16, dtype=torch.bool).triu(1)
        # (written-out seconds, fused seconds) -> whether fused is chosen
        for (written_s, fused_s), fused in (((1.0, 0.5), True), ((1.0, 2.0), False), ((1.0, 1.1), True)):
            with self.subTest(written_s=written_s, fused_s=fused_s):
                torch._dynamo.reset()
                backend.reset_stats()
                choice.reset()
                q, k, v = (torch.randn(2, 4, 16, 8, requires_grad=True) for _ in range(3))
                # The measurement is replaced by its verdict, so that both branches run.
                with mock.patch.object(choice, "_measure", return_value=(written_s, fused_s)):
                    out = torch.compile(causal, backend="stitch")(q, k, v, cond)
                got = [out.detach()] + list(torch.autograd.grad(out.square().sum(), (q, k, v)))
                out = causal(q, k, v, cond)
                want = [out.detach()] + list(torch.autograd.grad(out.square().sum(), (q, k, v)))
                for g, w in zip(got, want):
                    torch.testing.assert_close(g, w, **F32_BLOCK)
                self.assertEqual(list(choice.measurements.values()), [(fused_s, written_s)])
                self.assertEqual(choice.written_out_chosen(written_s, fused_s), not fused)
                forward = [s for s in backend.all_stats() if s.kind == "forward"][0]
                self.assertEqual(forward.attention, int(fused))
        # Another option value is refused by name rather than read as a truth value.
        torch._dynamo.reset()
        with self.assertRaisesRegex(Exception, 'options\\["attention"\\] is \'always\'; it takes True, False or "auto"'):
            torch.compile(causal, backend="stitch", options={"attention": "always"})(q, k, v, cond)
        # And the measurement itself, on these shapes: two positive times, with the
        # operands contiguous and as a projection's heads ([B, T, H, D] memory).
        heads = [torch.randn(2, 16, 4, 8).transpose(1, 2) for _ in range(3)]
        for operands, layout in (((q, k, v), None), (heads, (0, 2, 1, 3))):
            for training in (True, False):
                key = choice.problem(*operands, cond, training)
                self.assertEqual(key[-1], (layout,) * 3)
                made = choice._operands(key)[:3]
                self.assertEqual([t.stride() for t in made], [t.stride() for t in operands])
                written_s, fused_s = choice._measure(key)
                self.assertGreater(written_s, 0.0)
                self.assertGreater(fused_s, 0.0)

    def test_an_output_laid_out_like_a_permute_is_written_so(self):
        # The fused backward's gradients lie as the heads did ([B, T, H, D] memory of a
        # [B, H, T, D] tensor); the partition adding them writes its sum laid out the
        # same, so that the view PyTorch's trace makes of it holds (it raised before).
        layer = nn.Linear(64, 64)

        def attend(x, m):
            q = layer(x).view(2, 16, 4, 16).transpose(1, 2)
            return F.scaled_dot_product_attention(q, q, q, attn_mask=m).square().sum()

        x, m = torch.randn(2, 16, 64), torch.randn(16, 16)
        torch.compile(attend, backend="stitch")(x, m).backward()
        got = [p.grad.clone() for p in layer.parameters()]
        layer.zero_grad()
        attend(x, m).backward()
        for g, w in zip(got, [p.grad for p in layer.parameters()]):
            torch.testing.assert_close(g, w, **F32_BLOCK)
        backward = [s for s in self.assert_stitch_ran() if s.kind == "backward"][0]
        sums = [p.text for p in backward.partitions if " = add(" in (p.text or "")]
        self.assertEqual(len(sums), 1, str(backward))
        self.assertIn("_laid = transpose(", sums[0])

    def test_a_parameter_mask_keeps_the_fused_kernel(self):
        # T5's position bias is a parameter: a mask that requires grad sent PyTorch's SDPA to
        # its unfused math kernel even in inference, so the pass detaches the mask.
        class Biased(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bias = torch.nn.Parameter(torch.randn(1, 4, 16, 16))

            def forward(self, q, k, v):
                return (((q @ k.transpose(-2, -1)) + self.bias).softmax(-1) @ v).tanh()  # a Stitch kernel too

        q, k, v = (torch.randn(2, 4, 16, 8) for _ in range(3))
        model = Biased()
        stats = self.compiled_matches(model, q, k, v, tol=F32_BLOCK, options={"attention": True})
        self.assertEqual(stats[0].attention, 1)
        compiled = torch.compile(model, backend="stitch", options={"attention": True})
        with torch.inference_mode(), torch.profiler.profile() as prof:
            compiled(q, k, v)
        names = {e.name for e in prof.events()}
        self.assertIn("aten::_scaled_dot_product_flash_attention_for_cpu", names)
        self.assertNotIn("aten::_scaled_dot_product_attention_math", names)

    def test_half_attention_is_fused_too(self):
        # In bf16 and f16 the fused call keeps the scores and probabilities in f32 where
        # eager rounds them (as Inductor's replacement does): nearer the exact result on
        # average. The largest element's error is mostly the output's own rounding,
        # which both pay: in f16 it was above eager's for 3 of 12 seeds (at most 1.53x),
        # so it is held to the project's bound for half types, twice eager's.
        def causal(q, k, v, cond):
            return ((q @ k.transpose(-2, -1)) * 0.35).masked_fill(cond, float("-inf")).softmax(-1) @ v

        q, k, v = (torch.randn(2, 4, 16, 8) for _ in range(3))
        cond = torch.ones(16, 16, dtype=torch.bool).triu(1)
        exact = causal(q.double(), k.double(), v.double(), cond)
        for dtype, tol in ((torch.bfloat16, BF16), (torch.float16, F16)):
            with self.subTest(dtype):
                torch._dynamo.reset()
                backend.reset_stats()
                args = (q.to(dtype), k.to(dtype), v.to(dtype), cond)
                stats = self.compiled_matches(causal, *args, tol=tol, options={"attention": True})
                self.assertEqual(stats[0].attention, 1)
                got = torch.compile(causal, backend="stitch", options={"attention": True})(*args).double()
                eager = causal(*args).double()
                self.assertLess((got - exact).abs().mean(), (eager - exact).abs().mean())
                self.assertLessEqual((got - exact).abs().max(), 2 * (eager - exact).abs().max())

    def test_attention_as_stitchs_own_op(self):
        # options={"stitch_attention": True}: the fused attention joins a partition as
        # Stitch's attention op (a causal mask and a padding bias as its bias).
        for block, args in ((GPT2Block(), (torch.randn(2, 16, 64),)),
                            (BertLayerWithMask(), BertLayerWithMask().example_inputs())):
            with self.subTest(type(block).__name__):
                torch._dynamo.reset()
                backend.reset_stats()
                stats = self.compiled_matches(randomise(block).eval(), *args, tol=F32_BLOCK,
                                              options={"stitch_attention": True, "attention": True})
                self.assertEqual(stats[0].attention, 1)
                self.assertNotIn("aten.scaled_dot_product_attention.default", stats[0].torch_ops)
                self.assertTrue(any("attention(" in (p.text or "") for p in stats[0].partitions))

    def test_a_model_calling_sdpa_keeps_the_fused_kernel(self):
        def attend(q, k, v, m):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=m) * 2

        q, m = torch.randn(2, 4, 16, 8), torch.randn(2, 1, 16, 16)
        stats = self.compiled_matches(attend, q, q, q, m, tol=F32_BLOCK)
        self.assertEqual(stats[0].torch_ops["aten._scaled_dot_product_flash_attention_for_cpu.default"], 1)
        self.assertNotIn("aten.bmm.default", stats[0].torch_ops)

    def test_registered_as_stitch(self):
        from torch._dynamo.backends.registry import lookup_backend

        self.assertIs(lookup_backend("stitch"), backend.stitch_backend)
        self.assertIn("stitch", torch._dynamo.list_backends())


if __name__ == "__main__":
    unittest.main()
