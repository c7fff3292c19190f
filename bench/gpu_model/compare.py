"""The GPU model's predictions beside a GPU run's measurements (docs/gpu-model.md,
Validation): joins `stitch bench --backend cuda-sim --profile` documents (or the
fit tool's) with `stitch bench --backend cuda` documents on (workload, planner)
and reports each point's predicted and measured fraction of copy, the absolute
error, and the summary the issue's targets are stated in (median and largest
absolute error, points over 0.2).

    python3 bench/gpu_model/compare.py --predicted P.json --measured M.json [--md OUT.md]

A document may also be a JSON object of such documents keyed by a label (the
row-schedule runs, gpu-*-rows.json); keys then join on (label, workload, planner).
"""

import argparse
import json
import statistics
import sys


def rows_of(path):
    """(label, workload, planner) -> row, for one document or a keyed set of them."""
    with open(path) as f:
        doc = json.load(f)
    docs = {"": doc} if "results" in doc else doc
    return {(label, r["workload"], r["planner"]): r for label, d in docs.items() for r in d["results"]}


def compare(predicted, measured):
    points = []
    for key, m in sorted(measured.items()):
        p = predicted.get(key)
        if p is None or m.get("fraction_of_copy") is None or p.get("predicted_of_copy") is None:
            continue
        points.append({"label": key[0], "workload": key[1], "planner": key[2],
                       "measured": m["fraction_of_copy"], "predicted": p["predicted_of_copy"],
                       "error": p["predicted_of_copy"] - m["fraction_of_copy"]})
    return points


def summary(points):
    errors = [abs(p["error"]) for p in points]
    if not errors:
        return "no point in both documents"
    worst = max(points, key=lambda p: abs(p["error"]))
    return (f"{len(points)} points: median |error| {statistics.median(errors):.3f} of copy, largest "
            f"{abs(worst['error']):.3f} ({worst['label'] + ' ' if worst['label'] else ''}{worst['workload']} "
            f"{worst['planner']}), {sum(e > 0.2 for e in errors)} over 0.2, {sum(e > 0.07 for e in errors)} over 0.07")


def markdown(points):
    lines = ["| run | workload | planner | measured of copy | predicted of copy | error |",
             "| --- | --- | --- | ---: | ---: | ---: |"]
    for p in points:
        lines.append(f"| {p['label'] or '-'} | {p['workload']} | {p['planner']} | {p['measured']:.3f} | "
                     f"{p['predicted']:.3f} | {p['error']:+.3f} |")
    return "\n".join(lines) + "\n\n" + summary(points) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--predicted", required=True)
    parser.add_argument("--measured", required=True)
    parser.add_argument("--md", help="write the table as Markdown here")
    args = parser.parse_args()
    points = compare(rows_of(args.predicted), rows_of(args.measured))
    text = markdown(points)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
