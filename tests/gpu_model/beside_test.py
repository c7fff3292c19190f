"""bench/gpu_model/beside.py, which the GPU check runs after its benchmarks (docs/gpu-model.md,
Predictions before a GPU run): the newest committed prediction is taken, its commit is
compared with the measured one, and the points join on (workload, planner)."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "gpu_model"))
import beside  # noqa: E402


def document(rows, commit=None, measured=True):
    field = "fraction_of_copy" if measured else "predicted_of_copy"
    doc = {"results": [{"workload": w, "planner": p, field: v} for (w, p), v in rows.items()]}
    if commit:
        doc["machine"] = {"commit": commit}
    return doc


class BesideTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, doc):
        with open(os.path.join(self.dir.name, name), "w") as f:
            json.dump(doc, f)

    def run_main(self, *args):
        out = io.StringIO()
        argv = ["beside.py", "--results", self.dir.name, "--date", "2026-12-05", *args]
        with contextlib.redirect_stdout(out):
            old, sys.argv = sys.argv, argv
            try:
                status = beside.main()
            finally:
                sys.argv = old
        return status, out.getvalue()

    def test_the_newest_prediction_beside_the_run(self):
        self.write("gpu-model-2026-12-01-h200-predicted.json",
                   document({("add", "stitch"): 0.5}, commit="old", measured=False))
        self.write("gpu-model-2026-12-04-h200-predicted.json",
                   document({("add", "stitch"): 1.0, ("softmax", "stitch"): 0.7}, commit="abc123", measured=False))
        self.write("gpu-2026-12-05-stitch.json", document({("add", "stitch"): 0.9, ("softmax", "stitch"): 0.4}))
        md = os.path.join(self.dir.name, "model.md")
        status, text = self.run_main("--commit", "abc123", "--md", md)
        self.assertEqual(status, 0)
        self.assertIn("gpu-model-2026-12-04-h200-predicted.json (made at abc123)", text)
        self.assertNotIn("another commit", text)
        self.assertIn("2 points: median |error| 0.200 of copy, largest 0.300 (softmax stitch), 1 over 0.2", text)
        # The worst point first among the listed ones.
        self.assertLess(text.index("softmax stitch: measured 0.400"), text.index("add stitch: measured 0.900"))
        with open(md) as f:
            self.assertIn("| - | softmax | stitch | 0.400 | 0.700 | +0.300 |", f.read())

    def test_a_prediction_of_another_commit_is_said(self):
        self.write("gpu-model-2026-12-04-h200-predicted.json",
                   document({("add", "stitch"): 1.0}, commit="abc123", measured=False))
        self.write("gpu-2026-12-05-stitch.json", document({("add", "stitch"): 1.0}))
        status, text = self.run_main("--commit", "def456")
        self.assertEqual(status, 0)
        self.assertIn("warning: the predictions were made at another commit", text)

    def test_nothing_to_put_beside_is_a_warning(self):
        status, text = self.run_main()
        self.assertEqual(status, 0)
        self.assertIn("warning: no ", text)
        self.write("gpu-2026-12-05-stitch.json", document({("add", "stitch"): 1.0}))
        status, text = self.run_main()
        self.assertEqual(status, 0)
        self.assertIn("warning: no committed gpu-model-*-h200-predicted.json", text)

    def test_a_missing_results_folder_exits_2(self):
        with contextlib.redirect_stderr(io.StringIO()):
            old, sys.argv = sys.argv, ["beside.py", "--results", os.path.join(self.dir.name, "none"), "--date", "x"]
            try:
                self.assertEqual(beside.main(), 2)
            finally:
                sys.argv = old


if __name__ == "__main__":
    unittest.main()
