"""A GPU run's measurements beside the model's predictions made before it
(docs/gpu-model.md, Predictions before a GPU run): scripts/gpu-check.sh runs this
after its benchmarks. Picks the newest committed prediction for the target
(bench/results/gpu-model-<date>-<target>-predicted.json, and -rows.json beside it
when the run timed forced row schedules), says which commit it was made at against
the commit measured, and writes the joined table (compare.py) as Markdown.

    python3 bench/gpu_model/beside.py --results bench/results --date DATE
        [--target h200] [--commit SHA] [--md OUT.md]

Prints a few summary lines for the check's summary; exit status 0 also when there
is nothing to compare (a warning line says why), 2 on bad arguments.
"""

import argparse
import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402


def newest_prediction(results, target, suffix=""):
    paths = sorted(glob.glob(os.path.join(results, f"gpu-model-*-{target}-predicted{suffix}.json")))
    return paths[-1] if paths else None


def commit_of(path):
    with open(path) as f:
        doc = json.load(f)
    docs = [doc] if "results" in doc else list(doc.values())
    commits = {d.get("machine", {}).get("commit") for d in docs}
    commits.discard(None)
    return ", ".join(sorted(commits)) if commits else "not recorded"


def largest(points, n):
    return sorted(points, key=lambda p: -abs(p["error"]))[:n]


def report(predicted_path, measured_path, commit):
    points = compare.compare(compare.rows_of(predicted_path), compare.rows_of(measured_path))
    made_at = commit_of(predicted_path)
    lines = [f"predictions {os.path.basename(predicted_path)} (made at {made_at}) beside "
             f"{os.path.basename(measured_path)} (measured at {commit or 'this checkout'})"]
    if commit and made_at != "not recorded" and not made_at.startswith(commit[:12]):
        lines.append("warning: the predictions were made at another commit; the kernels may differ")
    lines.append(compare.summary(points))
    for p in largest(points, 5):
        label = f"{p['label']} " if p["label"] else ""
        lines.append(f"  {label}{p['workload']} {p['planner']}: measured {p['measured']:.3f}, "
                     f"predicted {p['predicted']:.3f} of copy")
    return points, lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, help="the folder of the results files")
    parser.add_argument("--date", required=True, help="the GPU run's date, as in gpu-<date>-stitch.json")
    parser.add_argument("--target", default="h200")
    parser.add_argument("--commit", help="the commit the GPU run measured")
    parser.add_argument("--md", help="write the joined tables as Markdown here")
    args = parser.parse_args()
    if not os.path.isdir(args.results):
        print(f"beside.py: no folder {args.results}", file=sys.stderr)
        return 2
    pairs = [("", os.path.join(args.results, f"gpu-{args.date}-stitch.json")),
             ("-rows", os.path.join(args.results, f"gpu-{args.date}-rows.json"))]
    markdown = []
    for suffix, measured in pairs:
        if not os.path.exists(measured):
            if not suffix:
                print(f"warning: no {measured}; nothing measured to put beside the model")
            continue
        predicted = newest_prediction(args.results, args.target, suffix)
        if predicted is None:
            print(f"warning: no committed gpu-model-*-{args.target}-predicted{suffix}.json "
                  f"(scripts/gpu-predict.sh makes it)")
            continue
        points, lines = report(predicted, measured, args.commit)
        print("\n".join(lines))
        markdown.append(f"## {os.path.basename(measured)} against {os.path.basename(predicted)}\n\n"
                        + compare.markdown(points))
    if args.md and markdown:
        with open(args.md, "w") as f:
            f.write("\n".join(markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
