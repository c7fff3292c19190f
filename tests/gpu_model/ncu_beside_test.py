"""bench/gpu_model/ncu_beside.py on a synthetic `ncu --csv --page raw --print-units base`
file (docs/gpu-model.md, Hardware counters beside the model): ncu's lines before the
header, a units row, quoted numbers with thousands separators, a second launch of a
kernel, and the join with a predicted stitch bench document."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "gpu_model"))
import ncu_beside  # noqa: E402

METRICS = [ncu_beside.DRAM_READ, ncu_beside.DRAM_WRITE, ncu_beside.LD_SECTORS, ncu_beside.LD_REQUESTS,
           ncu_beside.ST_SECTORS, ncu_beside.ST_REQUESTS, ncu_beside.REGISTERS, ncu_beside.WARPS_ACTIVE,
           ncu_beside.DURATION]
FIXED = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
         "Grid Size", "Device", "CC"]


def quoted(cells):
    return ",".join(f'"{c}"' for c in cells)


def launch(i, kernel, values):
    return quoted([str(i), "1234", "stitch", "127.0.0.1", kernel, "1", "7", "(256, 1, 1)", "(16384, 1, 1)", "0",
                   "9.0"] + values)


CSV = "\n".join([
    "==PROF== Connected to process 1234 (stitch)",
    "==PROF== Profiling \"k_add_g0\" - 0: 0%....50%....100% - 9 passes",
    quoted(FIXED + METRICS),
    quoted([""] * len(FIXED) + ["byte", "byte", "sector", "request", "sector", "request", "register/thread", "%",
                                "nsecond"]),
    launch(0, "k_add_g0", ["134,217,728", "67,108,864", "16,777,216", "4,194,304", "8,388,608", "2,097,152",
                           "18", "87.5", "98,000"]),
    launch(1, "k_softmax_g0", ["67,200,000", "67,108,864", "8,388,608", "2,097,152", "8,388,608", "2,097,152",
                               "30", "n/a", "120,500"]),
    launch(2, "k_add_g0", ["1", "1", "1", "1", "1", "1", "18", "1", "1"]),
    "==PROF== Disconnected from process 1234",
]) + "\n"

PREDICTED = {"results": [
    {"workload": "add", "planner": "stitch", "predicted_s": 9.3e-05, "launches": [
        {"kernel": "k_add_g0", "dram_read_bytes": 134217728.0, "dram_write_bytes": 67108864.0,
         "sectors_per_request": 4.0, "registers": 18, "occupancy": 1.0, "predicted_s": 9.3e-05,
         "bound": "dram", "times_s": {"launch": 4e-06}}]},
    {"workload": "add", "planner": "xla", "launches": [
        {"kernel": "k_add_g0", "dram_read_bytes": 1.0, "dram_write_bytes": 1.0}]},
    {"workload": "softmax", "planner": "stitch", "launches": [
        {"kernel": "k_softmax_g0", "dram_read_bytes": 67108864.0, "dram_write_bytes": 67108864.0,
         "sectors_per_request": 4.0, "registers": 32, "occupancy": 1.0, "predicted_s": 9.32e-05,
         "bound": "dram", "times_s": {"launch": 4e-06}}]},
    {"workload": "softmax_explicit", "planner": "stitch", "launches": [
        {"kernel": "k_softmax_g0", "dram_read_bytes": 5.0, "dram_write_bytes": 5.0}]},
]}


class NcuBesideTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.csv = os.path.join(self.dir.name, "ncu.csv")
        self.predicted = os.path.join(self.dir.name, "gpu-model-2026-12-03-h200-predicted.json")
        with open(self.csv, "w") as f:
            f.write(CSV)
        with open(self.predicted, "w") as f:
            json.dump(PREDICTED, f)

    def tearDown(self):
        self.dir.cleanup()

    def run_main(self, *argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = ncu_beside.main(list(argv))
        return status, out.getvalue()

    def test_parses_the_raw_csv(self):
        launches = ncu_beside.read_csv(self.csv)
        self.assertEqual([x["kernel"] for x in launches], ["k_add_g0", "k_softmax_g0", "k_add_g0"])
        first = ncu_beside.first_launches(launches)
        add = first["k_add_g0"]
        self.assertEqual(add[ncu_beside.DRAM_READ], 134217728)
        self.assertEqual(add[ncu_beside.REGISTERS], 18)
        self.assertAlmostEqual(add[ncu_beside.DURATION], 98e-6)  # nanoseconds to seconds
        self.assertIsNone(first["k_softmax_g0"][ncu_beside.WARPS_ACTIVE])  # "n/a"

    def test_joins_with_the_stitch_planner(self):
        predicted, duplicates = ncu_beside.predicted_launches(self.predicted)
        self.assertEqual(duplicates, ["k_softmax_g0"])
        self.assertEqual(predicted["k_softmax_g0"][0], "softmax")  # the first kept
        rows = {r["kernel"]: r for r in ncu_beside.join(ncu_beside.first_launches(ncu_beside.read_csv(self.csv)),
                                                        predicted)}
        add = rows["k_add_g0"]
        self.assertEqual(add["workload"], "add")
        self.assertEqual(add["dram_read"], (134217728, 134217728.0))
        self.assertEqual(add["dram_write"], (67108864, 67108864.0))
        self.assertEqual(add["sectors_per_request"], (4.0, 4.0))  # loads and stores together
        self.assertEqual(add["load_sectors_per_request"], 4.0)
        self.assertEqual(add["registers"], (18, 18))
        self.assertEqual(add["occupancy"], (0.875, 1.0))
        self.assertAlmostEqual(add["duration_s"][0], 98e-6)
        self.assertEqual(add["launch_s"], 4e-06)
        self.assertIsNone(rows["k_softmax_g0"]["occupancy"][0])
        self.assertAlmostEqual(ncu_beside.dram_ratio(rows["k_softmax_g0"]), (67.2e6 + 67108864) / (2 * 67108864))

    def test_main_prints_and_writes_markdown(self):
        md = os.path.join(self.dir.name, "ncu.md")
        status, out = self.run_main("--csv", self.csv, "--predicted", self.dir.name, "--md", md)
        self.assertEqual(status, 0, out)
        self.assertIn("k_add_g0 (add): DRAM read 134.2/134.2 MB", out)
        self.assertIn("note: more than one predicted launch named k_softmax_g0", out)
        self.assertIn("2 kernels: DRAM bytes measured/predicted median", out)
        with open(md) as f:
            self.assertIn("| k_softmax_g0 | softmax |", f.read())

    def test_nothing_joins_is_a_warning(self):
        with open(self.predicted, "w") as f:
            json.dump({"results": []}, f)
        status, out = self.run_main("--csv", self.csv, "--predicted", self.predicted)
        self.assertEqual(status, 0)
        self.assertIn("warning: no kernel in both", out)

    def test_missing_files_exit_2(self):
        self.assertEqual(self.run_main("--csv", self.csv + ".absent", "--predicted", self.predicted)[0], 2)
        self.assertEqual(self.run_main("--csv", self.csv, "--predicted", self.csv + ".absent")[0], 2)
        empty = os.path.join(self.dir.name, "empty")
        os.mkdir(empty)
        self.assertEqual(self.run_main("--csv", self.csv, "--predicted", empty)[0], 2)


if __name__ == "__main__":
    unittest.main()
