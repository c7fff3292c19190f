"""The corpus softmax report opened in a real browser (docs/report.md, Tested in a
browser): headless Chromium loads the page offline and the rendered DOM must show
every group of the plan, its schedule and its generated source, and the plan's
drawing with one box per group; a screenshot is taken as a browser would show it.

Usage: browser_test.py STITCH_BINARY SOURCE_DIR WORK_DIR
"""
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("no Chromium on PATH: `scripts/setup.sh --tests` installs Debian's chromium")


def main():
    stitch, source_dir, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    corpus = os.path.join(source_dir, "bench", "workloads", "softmax.stitch")
    page = os.path.join(work, "softmax-report.html")
    subprocess.run([stitch, "report", corpus, "-o", page], check=True)
    plan = json.loads(subprocess.run([stitch, "plan", corpus, "--format", "json"], check=True,
                                     capture_output=True, text=True).stdout)
    browser = chromium()
    with tempfile.TemporaryDirectory() as profile:
        common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                  f"--user-data-dir={profile}", "--window-size=1280,1600"]
        dom = subprocess.run(common + ["--dump-dom", "file://" + page], check=True, capture_output=True,
                             text=True, timeout=120).stdout
        shot = os.path.join(work, "softmax-report.png")
        if os.path.exists(shot):
            os.remove(shot)
        subprocess.run(common + ["--hide-scrollbars", f"--screenshot={shot}", "file://" + page], check=True,
                       capture_output=True, timeout=120)
    failures = []

    def expect(text, what):
        if text not in dom:
            failures.append(f"{what}: {text!r} is not in the rendered page")

    groups = plan["groups"]
    if len(groups) < 2:
        failures.append(f"the corpus softmax has {len(groups)} groups under xla; the test wants several")
    for g in groups:
        i = g["index"]
        expect(f'id="group-{i}"', f"group {i}'s section")
        expect(html.escape(g["schedule"]["schedule"], quote=False), f"group {i}'s schedule")
        expect(f"Generated source of <code>k_softmax_g{i}</code>", f"group {i}'s source")
        expect(f"void k_softmax_g{i}(", f"group {i}'s kernel text")
    clusters = dom.count('class="cluster"')
    if clusters != len(groups):
        failures.append(f"the drawing has {clusters} group boxes, the plan {len(groups)} groups")
    expect("<svg", "the drawing")
    if not os.path.exists(shot) or os.path.getsize(shot) < 10000:
        failures.append("Chromium wrote no screenshot")
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print(f"rendered: {len(groups)} groups, their schedules, sources and boxes; screenshot {shot}")


if __name__ == "__main__":
    main()
