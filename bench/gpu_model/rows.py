"""Does the GPU model pick the row schedule a GPU run found best (docs/gpu-model.md,
Validation)? For each row graph timed under every forced row schedule (a keyed set
of `stitch bench` documents, gpu-*-rows.json) and the model's predictions of the
same (stitch_gpu_model_fit --apply), the schedule the model ranks first is
compared with the measured best: a hit when its measured fraction of copy is
within 5% of the best one's.

    python3 bench/gpu_model/rows.py --predicted P.json --measured M.json
"""

import argparse
import json


def by_workload(path, field):
    with open(path) as f:
        docs = json.load(f)
    out = {}
    for schedule, doc in docs.items():
        for r in doc["results"]:
            if r.get(field) is not None:
                out.setdefault(r["workload"], {})[schedule] = r[field]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--predicted", required=True)
    parser.add_argument("--measured", required=True)
    args = parser.parse_args()
    predicted = by_workload(args.predicted, "predicted_of_copy")
    measured = by_workload(args.measured, "fraction_of_copy")
    hits = 0
    graphs = sorted(set(predicted) & set(measured))
    print("| graph | measured best | model's pick | pick's measured / best |")
    print("| --- | --- | --- | ---: |")
    for g in graphs:
        best = max(measured[g], key=measured[g].get)
        pick = max(predicted[g], key=predicted[g].get)
        ratio = measured[g].get(pick, 0) / measured[g][best]
        hits += ratio >= 0.95
        print(f"| {g} | {best} ({measured[g][best]:.3f}) | {pick} | {ratio:.3f} |")
    print(f"\nthe model's pick within 5% of the measured best on {hits} of {len(graphs)} graphs")


if __name__ == "__main__":
    main()
