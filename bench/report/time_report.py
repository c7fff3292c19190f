"""How long the fusion report takes to write and to render (docs/report.md, Speed).

For the corpus softmax and model-like graphs of 500 and 2,000 nodes
(tests/support/model_graph.h through `stitch_model_graph`), under the xla and stitch
planners: `stitch report` timed end to end (median of --repeat runs: parse, plan,
lower, every kernel's source, Graphviz's layout, the page), the page's size, and the
time headless Chromium takes from navigation start to the page loaded and laid out
(`performance.now()` at the load event after forcing a layout, read from a copy of
the page with that one line of script added; the report itself has no script).

Usage: time_report.py STITCH STITCH_MODEL_GRAPH OUT_PREFIX [--repeat N]
writes OUT_PREFIX.json and OUT_PREFIX.md.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cpu_name import cpu_name  # noqa: E402

TIMER = ("<script>window.addEventListener('load',()=>{document.body.offsetHeight;"
         "document.title='RENDERED '+performance.now().toFixed(1);});</script>")


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    sys.exit("no Chromium on PATH (Debian: apt-get install chromium)")


def render_ms(page_path, browser, work):
    timed = os.path.join(work, "timed.html")
    with open(page_path) as f, open(timed, "w") as out:
        out.write(f.read().replace("</body>", TIMER + "</body>"))
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                              "--dump-dom", "file://" + timed], capture_output=True, text=True, timeout=300).stdout
    m = re.search(r"RENDERED ([0-9.]+)", dom)
    if not m:
        sys.exit(f"Chromium did not load {page_path}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stitch")
    ap.add_argument("model_graph")
    ap.add_argument("out_prefix")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    source_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    browser = chromium()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        graphs = [("softmax (corpus)", os.path.join(source_dir, "bench", "workloads", "softmax.stitch"))]
        for nodes in (500, 2000):
            path = os.path.join(work, f"model{nodes}.stitch")
            with open(path, "w") as f:
                subprocess.run([args.model_graph, "1", str(nodes)], stdout=f, check=True)
            graphs.append((f"model graph, {nodes} nodes", path))
        for name, path in graphs:
            for planner in ("xla", "stitch"):
                page = os.path.join(work, "report.html")
                writes = []
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    subprocess.run([args.stitch, "report", path, "--planner", planner, "-o", page], check=True)
                    writes.append(time.perf_counter() - start)
                plan = json.loads(subprocess.run([args.stitch, "plan", path, "--planner", planner, "--format", "json"],
                                                 check=True, capture_output=True, text=True).stdout)
                ops = sum(len(g["ops"]) for g in plan["groups"])
                renders = [render_ms(page, browser, work) / 1e3 for _ in range(args.repeat)]
                with open(page) as f:
                    drawn = "every op" if 'class="cluster"' in f.read() else "one box per group"
                row = {"graph": name, "planner": planner, "groups": len(plan["groups"]), "ops_in_groups": ops,
                       "drawing": drawn, "page_bytes": os.path.getsize(page),
                       "write_s": statistics.median(writes), "render_s": statistics.median(renders)}
                row["total_s"] = row["write_s"] + row["render_s"]
                rows.append(row)
                print(f"{name:<26} {planner:<7} {row['groups']:>4} groups {row['page_bytes'] / 1e6:6.2f} MB  "
                      f"write {row['write_s']:.2f} s  render {row['render_s']:.2f} s", flush=True)
    version = subprocess.run([browser, "--version"], capture_output=True, text=True).stdout.strip()
    doc = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "cpu": cpu_name(),
           "cores": os.cpu_count(), "browser": version, "repeat": args.repeat, "results": rows}
    with open(args.out_prefix + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    lines = [f"# Fusion report: time to write and to render ({doc['date'][:10]})", "",
             f"Machine: {doc['cpu']}, {doc['cores']} cores; {version}, headless. Medians of {args.repeat} runs. "
             "`write`: `stitch report` end to end; `render`: Chromium from navigation start to the page loaded "
             "and laid out. Generated by `bench/report/time_report.py`.", "",
             "| graph | planner | groups | ops in groups | drawing | page | write | render | total |",
             "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| {r['graph']} | {r['planner']} | {r['groups']} | {r['ops_in_groups']} | {r['drawing']} | "
                     f"{r['page_bytes'] / 1e6:.2f} MB | {r['write_s']:.2f} s | {r['render_s']:.2f} s | "
                     f"{r['total_s']:.2f} s |")
    with open(args.out_prefix + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
