"""STITCH_TORCH_REPORT (docs/report.md, From torch.compile): one HTML page per graph the
torch backend compiles, with every ATen op and where it runs (an op Stitch does not
lower marked), and each Stitch partition's fusion report once it has compiled; and
stitch.report_sections / report_page for a graph built in Python."""

import os
import shutil
import tempfile
import unittest

try:
    import torch
except ImportError:
    raise unittest.SkipTest("torch is not importable: the torch.compile backend is not tested")

import stitch
import stitch.torch_backend as backend


def model(x):
    # cumsum has no Stitch lowering: PyTorch runs it between two partitions.
    y = torch.softmax(x * 2, dim=-1)
    z = torch.cumsum(y, dim=-1)
    return torch.tanh(z) + 1


class TorchReport(unittest.TestCase):
    def setUp(self):
        torch._dynamo.reset()
        backend.reset_stats()
        self.directory = tempfile.mkdtemp(prefix="stitch-torch-report-")
        os.environ["STITCH_TORCH_REPORT"] = self.directory

    def tearDown(self):
        del os.environ["STITCH_TORCH_REPORT"]
        shutil.rmtree(self.directory)

    def test_a_model_with_an_unsupported_op_still_gets_its_report(self):
        x = torch.randn(16, 64)
        with torch.inference_mode():
            got = torch.compile(model, backend="stitch")(x)
        torch.testing.assert_close(got, model(x), rtol=1e-5, atol=1e-5)
        pages = os.listdir(self.directory)
        self.assertEqual(len(pages), 1, pages)
        with open(os.path.join(self.directory, pages[0])) as f:
            page = f.read()
        self.assertTrue(page.startswith("<!DOCTYPE html>"))
        self.assertIn("aten.cumsum.default", page)
        self.assertIn("<b>unsupported</b>", page)
        partitions = [p for s in backend.all_stats() for p in s.partitions]
        self.assertEqual(len(partitions), 2, partitions)
        for p in partitions:
            # Each partition's own report, its ids prefixed so that they stay unique.
            self.assertIn(f'id="{p.name}"', page)
            self.assertIn(f'id="{p.name}-group-0"', page)
            self.assertIn("Generated source of", page)
        self.assertNotIn("Not compiled yet", page)

    def test_a_directory_that_cannot_be_written_warns_and_the_model_still_runs(self):
        blocker = os.path.join(self.directory, "a-file")
        with open(blocker, "w") as f:
            f.write("not a directory")
        os.environ["STITCH_TORCH_REPORT"] = os.path.join(blocker, "reports")
        x = torch.randn(16, 64)
        with self.assertWarnsRegex(UserWarning, "STITCH_TORCH_REPORT: cannot write"):
            with torch.inference_mode():
                got = torch.compile(model, backend="stitch")(x)
        torch.testing.assert_close(got, model(x), rtol=1e-5, atol=1e-5)

    def test_report_sections_of_a_graph_built_in_python(self):
        del os.environ["STITCH_TORCH_REPORT"]
        os.environ["STITCH_TORCH_REPORT"] = ""
        graph = stitch.parse("graph g(x: f32[8, 32]) -> (f32[8, 32]) {\n  y = softmax(x, axis=-1)\n  return y\n}\n").graphs["g"]
        sections = stitch.report_sections(graph, "stitch", "cpu", "a-")
        self.assertIn('id="a-group-0"', sections)
        self.assertIn("stitched", sections)
        page = stitch.report_page("t", sections)
        self.assertTrue(page.startswith("<!DOCTYPE html>"))
        with self.assertRaisesRegex(stitch.Error, "unknown planner 'fast'"):
            stitch.report_sections(graph, "fast")


if __name__ == "__main__":
    unittest.main()
