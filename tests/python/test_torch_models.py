"""The model set (torch_models.py) at small sizes, compiled by torch.compile(backend="stitch")
and compared with eager PyTorch: inference in f32 for every model and in bf16 for some,
and a training step (forward, loss, backward; both of AOTAutograd's graphs through
Stitch) whose loss and parameter gradients are compared with eager's. Each run asserts
that Stitch kernels ran and that no partition fell back.

Tolerances are test_torch_backend.py's (docs/torch.md): F32_BLOCK for f32 outputs, BF16
for bf16. Gradients are compared as fractions of eager's largest (F32_BLOCK): with random
weights of 0.5 they reach thousands (the T5 block's query weights' 4800), where eager f32
is itself 0.013 from float64, and Stitch as close, which an absolute 1e-3 would count as
a mismatch.
"""

import collections
import copy
import os
import subprocess
import sys
import unittest
import warnings

try:
    import torch
except ImportError:
    raise unittest.SkipTest("torch is not importable: the torch.compile backend is not tested")

import stitch.torch_backend as backend

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_torch_backend import BF16, F32_BLOCK, StitchCase, randomise, setUpModule, tearDownModule  # noqa: E402,F401
from torch_models import (BertLayer, BertModel, GPT2Block, LlamaBlock, LlamaDecoder, LMHead,  # noqa: E402
                          MixerBlock, T5Block, ViTBlock)


def bert_inputs(batch=2, tokens=16, d=64):
    """Hidden states and a padding mask hiding the second sequence's last quarter."""
    mask = torch.ones(batch, tokens)
    mask[1, tokens * 3 // 4:] = 0
    return torch.randn(batch, tokens, d), mask


def t5_block():
    """T5 folds attention's 1/sqrt(head_dim) into the queries' initial weights; without
    it the random block's scores reach 230 and its softmax is all but one-hot."""
    block = randomise(T5Block())
    with torch.no_grad():
        block.q.weight.mul_(block.head_dim ** -0.5)
    return block


def tokens(count=16):
    return lambda: (torch.randn(2, count, 64),)


# name -> (random model, its inputs): the small sizes of each model's defaults.
MODELS = {
    "bert_layer": (lambda: randomise(BertLayer()), bert_inputs),
    "gpt2_block": (lambda: randomise(GPT2Block()), tokens()),
    "llama_block": (lambda: randomise(LlamaBlock()), tokens()),
    "t5_block": (t5_block, tokens()),
    "vit_block": (lambda: randomise(ViTBlock()), tokens(17)),
    "mixer_block": (lambda: randomise(MixerBlock()), tokens()),
    "lm_head": (lambda: randomise(LMHead()), lambda: (torch.randn(2, 16, 64), torch.randint(0, 512, (2, 16)))),
    "bert_model": (lambda: randomise(BertModel()), bert_inputs),
    "llama_decoder": (lambda: randomise(LlamaDecoder()), tokens()),
}


def loss_of(output):
    """The LM head's own loss, or the mean square of a block's output."""
    return output if output.dim() == 0 else output.float().square().mean()


# The back end of the partitions: "cpu", or "cuda" where ModelsOnCudaSim runs Models in
# a child process on the simulated CUDA driver (the partitions compiled for the CUDA
# back end, run through host memory: torch_backend's options["backend"]).
BACKEND = os.environ.get("STITCH_TEST_TORCH_BACKEND", "cpu")


class Models(StitchCase):
    options = {"backend": BACKEND}

    def assert_on_backend(self, stats):
        for s in stats:
            for p in s.partitions:
                self.assertEqual(p.backend, BACKEND, p.name)

    def model_and_inputs(self, name, dtype=torch.float32):
        torch.manual_seed(0)
        make_model, make_inputs = MODELS[name]
        model = make_model().to(dtype)
        inputs = tuple(a.to(dtype) if a.is_floating_point() else a for a in make_inputs())
        return model, inputs

    def check_inference(self, name, dtype=torch.float32, tol=F32_BLOCK):
        torch._dynamo.reset()
        backend.reset_stats()
        model, inputs = self.model_and_inputs(name, dtype)
        if dtype == torch.float32:
            self.assert_on_backend(self.compiled_matches(model, *inputs, tol=tol, options=self.options))
            return
        # In f16 and bf16 the fused attention keeps the scores and probabilities in f32
        # where eager rounds them (docs/torch.md, Attention), and by default every
        # partition keeps its half-precision values in f32 between ops (Half precision
        # between ops): with both off, every op rounds as eager's and the outputs are
        # within `tol` of eager's; with the defaults, the outputs are no further from the
        # model run in float64 than twice eager's error, the f32 blocks' criterion
        # (test_torch_backend.py).
        self.compiled_matches(model, *inputs, tol=tol,
                              options={**self.options, "attention": False, "f32_intermediates": False})
        self.assert_as_close_to_float64_as_eager(model, inputs, name, options=self.options)

    def check_training(self, name):
        """One training step compiled by Stitch: the loss and every parameter's gradient
        as eager's (gradients over their largest, where that is above 1), and Stitch
        kernels in the forward and the backward graph."""
        torch._dynamo.reset()
        backend.reset_stats()
        model, inputs = self.model_and_inputs(name)
        reference = copy.deepcopy(model)
        compiled = torch.compile(model, backend="stitch", options=self.options)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a partition falling back warns: an error here
            loss = loss_of(compiled(*inputs))
            loss.backward()
        want = loss_of(reference(*inputs))
        want.backward()
        torch.testing.assert_close(loss, want, **F32_BLOCK)
        for (p, got), want_p in zip(model.named_parameters(), reference.parameters()):
            self.assertIsNotNone(got.grad, p)
            scale = want_p.grad.abs().max().clamp(min=1.0)
            torch.testing.assert_close(got.grad / scale, want_p.grad / scale, **F32_BLOCK,
                                       msg=lambda m, p=p, s=scale: f"{p}.grad / {s.item():.3g}: {m}")
        kernels = collections.Counter()
        stats = self.assert_stitch_ran()
        self.assert_on_backend(stats)
        for s in stats:
            kernels[s.kind] += s.kernel_count
        self.assertGreater(kernels["forward"], 0, "no Stitch kernel in the forward graph")
        self.assertGreater(kernels["backward"], 0, "no Stitch kernel in the backward graph")

    def check(self, name, bf16=False):
        with self.subTest("f32 inference"):
            self.check_inference(name)
        if bf16:
            with self.subTest("bf16 inference"):
                self.check_inference(name, torch.bfloat16, BF16)
        with self.subTest("f32 training"):
            self.check_training(name)

    def test_bert_layer(self):
        self.check("bert_layer")

    def test_gpt2_block(self):
        self.check("gpt2_block", bf16=True)

    def test_llama_block(self):
        self.check("llama_block", bf16=True)

    def test_t5_block(self):
        # bf16: the T5 layer norm's mean square in f32 between bf16 ops.
        self.check("t5_block", bf16=True)

    def test_vit_block(self):
        self.check("vit_block")

    def test_mixer_block(self):
        self.check("mixer_block")

    def test_lm_head(self):
        self.check("lm_head", bf16=True)

    def test_bert_model(self):
        self.check("bert_model")

    def test_llama_decoder(self):
        self.check("llama_decoder")


class ModelsOnCudaSim(unittest.TestCase):
    """The model set at small sizes with every partition compiled for the CUDA back end,
    run on the simulated driver (docs/cuda-sim.md): Models in a child process, since a
    process opens its CUDA driver once, with STITCH_CUDA_DRIVER naming the simulated one."""

    def test_the_model_set_on_the_simulated_driver(self):
        source = os.environ.get("STITCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
        driver = os.environ.get("STITCH_CUDA_SIM_DRIVER") or os.path.join(source, "build", "libstitch_cuda_sim.so")
        if not os.path.exists(driver):
            self.skipTest(f"no simulated CUDA driver at {driver} (a build with the CUDA toolkit makes it)")
        env = dict(os.environ, STITCH_CUDA_DRIVER=driver, STITCH_TEST_TORCH_BACKEND="cuda")
        child = subprocess.run([sys.executable, "-m", "unittest", "test_torch_models.Models"], env=env,
                               cwd=os.path.dirname(os.path.abspath(__file__)), capture_output=True, text=True)
        self.assertEqual(child.returncode, 0, child.stdout[-4000:] + child.stderr[-8000:])
        self.assertRegex(child.stderr, r"Ran 9 tests")


if __name__ == "__main__":
    unittest.main()
