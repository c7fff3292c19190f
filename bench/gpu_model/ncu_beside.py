"""Hardware counters beside the GPU model (docs/gpu-model.md, Hardware counters beside
the model): scripts/gpu-ncu.sh runs Nsight Compute over a few Stitch kernels and this
joins its raw CSV (`ncu --csv --page raw --print-units base`) with the model's committed
predictions on the kernel name, the first launch of each kernel against the stitch
planner's launch of that name.

    python3 bench/gpu_model/ncu_beside.py --csv ncu.csv --predicted PRED.json|DIR
        [--target h200] [--md OUT.md]

With a folder, the newest gpu-model-*-<target>-predicted.json in it. Prints one line a
kernel and a summary; exit status 0 also when nothing joins (a warning line says why),
2 on bad arguments or missing files.
"""

import argparse
import csv
import glob
import json
import os
import statistics
import sys

DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
LD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
LD_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
ST_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
ST_REQUESTS = "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
REGISTERS = "launch__registers_per_thread"
WARPS_ACTIVE = "sm__warps_active.avg.pct_of_peak_sustained_active"
DURATION = "gpu__time_duration.sum"
# The shared-memory configuration the driver chose for the launch (the carveout), per SM.
SHARED_CONFIG = "launch__shared_mem_config_size"

# Units as ncu names them, to bytes and seconds (base units need none of this).
SCALE = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9,
         "nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
         "second": 1, "s": 1}


def number(text, unit=""):
    """A CSV cell as a float in base units: "1,234" is 1234; "n/a" or "" is None."""
    text = text.strip().replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return None
    return value * SCALE.get(unit.strip().lower(), 1)


def read_csv(path):
    """ncu's launches in order: [{"kernel": name, metric: value, ...}]. Takes the wide
    layout (a column a metric, then a units row) and the long one (Metric Name, Metric
    Unit, Metric Value columns); lines before the header (==PROF==, the program's) are skipped."""
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(line for line in lines[start:] if line.startswith('"')))
    header, rows = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    launches = {}
    if "Metric Name" in col:
        for r in rows:
            launch = launches.setdefault(r[col["ID"]], {"kernel": kernel_name(r[col["Kernel Name"]])})
            unit = r[col["Metric Unit"]] if "Metric Unit" in col else ""
            launch[r[col["Metric Name"]]] = number(r[col["Metric Value"]], unit)
        return list(launches.values())
    units = [""] * len(header)
    if rows and rows[0][col["ID"]] == "":  # the units row
        units, rows = rows[0], rows[1:]
    out = []
    for r in rows:
        launch = {"kernel": kernel_name(r[col["Kernel Name"]])}
        for name, i in col.items():
            if "__" in name and i < len(r):
                launch[name] = number(r[i], units[i] if i < len(units) else "")
        out.append(launch)
    return out


def kernel_name(text):
    return text.split("(")[0].strip()


def first_launches(launches):
    first = {}
    for launch in launches:
        first.setdefault(launch["kernel"], launch)
    return first


def newest_prediction(folder, target):
    paths = sorted(glob.glob(os.path.join(folder, f"gpu-model-*-{target}-predicted.json")))
    return paths[-1] if paths else None


def predicted_launches(path):
    """kernel name -> (workload, launch) for the stitch planner's rows; and the names
    that more than one launch has (the first is kept)."""
    with open(path) as f:
        doc = json.load(f)
    out, duplicates = {}, []
    for row in doc.get("results", []):
        if row.get("planner") != "stitch":
            continue
        for launch in row.get("launches") or []:
            if launch["kernel"] in out:
                duplicates.append(launch["kernel"])
            else:
                out[launch["kernel"]] = (row["workload"], launch)
    return out, duplicates


def ratio(a, b):
    return a / b if a is not None and b else None


def join(measured, predicted):
    rows = []
    for name, m in sorted(measured.items()):
        if name not in predicted:
            continue
        workload, p = predicted[name]
        sectors = [m.get(k) for k in (LD_SECTORS, ST_SECTORS)]
        requests = [m.get(k) for k in (LD_REQUESTS, ST_REQUESTS)]
        both = None
        if None not in sectors and None not in requests:
            both = ratio(sum(sectors), sum(requests))
        active = m.get(WARPS_ACTIVE)
        rows.append({
            "kernel": name, "workload": workload,
            "dram_read": (m.get(DRAM_READ), p.get("dram_read_bytes")),
            "dram_write": (m.get(DRAM_WRITE), p.get("dram_write_bytes")),
            # The model counts global loads and stores together (KernelCounters::sectors_per_request).
            "sectors_per_request": (both, p.get("sectors_per_request")),
            "load_sectors_per_request": ratio(m.get(LD_SECTORS), m.get(LD_REQUESTS)),
            "registers": (m.get(REGISTERS), p.get("registers")),
            "occupancy": (active / 100 if active is not None else None, p.get("occupancy")),
            "duration_s": (m.get(DURATION), p.get("predicted_s")),
            "launch_s": (p.get("times_s") or {}).get("launch"),
            "shared_config": m.get(SHARED_CONFIG),
        })
    return rows


def dram_ratio(row):
    (mr, pr), (mw, pw) = row["dram_read"], row["dram_write"]
    if None in (mr, mw, pr, pw):
        return None
    return ratio(mr + mw, pr + pw)


def fmt(value, scale=1.0, digits=2):
    return "n/a" if value is None else f"{value * scale:.{digits}f}"


def pair(r, key, scale=1.0, digits=2, sep="/"):
    return f"{fmt(r[key][0], scale, digits)}{sep}{fmt(r[key][1], scale, digits)}"


def line(r):
    return (f"{r['kernel']} ({r['workload']}): DRAM read {pair(r, 'dram_read', 1e-6, 1)} MB, "
            f"write {pair(r, 'dram_write', 1e-6, 1)} MB; sectors/request (ld+st) {pair(r, 'sectors_per_request')} "
            f"(ld only {fmt(r['load_sectors_per_request'])}); registers {pair(r, 'registers', 1, 0)}; "
            f"occupancy {fmt(r['occupancy'][0])} achieved/{fmt(r['occupancy'][1])} theoretical; "
            f"time {pair(r, 'duration_s', 1e6, 1)} us (the prediction includes a launch term of "
            f"{fmt(r['launch_s'], 1e6, 1)} us); shared memory configured {fmt(r.get('shared_config'), 1 / 1024, 0)} KiB")


def summary(rows):
    dram = [x for x in map(dram_ratio, rows) if x is not None]
    time = [x for x in (ratio(*r["duration_s"]) for r in rows) if x is not None]
    return (f"{len(rows)} kernels: DRAM bytes measured/predicted median "
            f"{fmt(statistics.median(dram) if dram else None, 1, 3)}, time measured/predicted median "
            f"{fmt(statistics.median(time) if time else None, 1, 3)}")


def markdown(rows):
    out = ["| kernel | workload | DRAM read MB | DRAM write MB | sectors/request (ld+st) | ld only | "
           "registers | occupancy (achieved / theoretical) | time us | predicted us | shared config KiB |",
           "| --- | --- | --- | --- | --- | ---: | --- | --- | ---: | ---: | ---: |"]
    for r in rows:
        out.append(f"| {r['kernel']} | {r['workload']} | {pair(r, 'dram_read', 1e-6, 1, ' / ')} | "
                   f"{pair(r, 'dram_write', 1e-6, 1, ' / ')} | {pair(r, 'sectors_per_request', sep=' / ')} | "
                   f"{fmt(r['load_sectors_per_request'])} | {pair(r, 'registers', 1, 0, ' / ')} | "
                   f"{pair(r, 'occupancy', sep=' / ')} | {fmt(r['duration_s'][0], 1e6, 1)} | "
                   f"{fmt(r['duration_s'][1], 1e6, 1)} | {fmt(r.get('shared_config'), 1 / 1024, 0)} |")
    return ("Measured / predicted. Sectors per request: global loads and stores together, as the model "
            "counts them. Predicted time includes the model's launch term.\n\n"
            + "\n".join(out) + "\n\n" + summary(rows) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", required=True, help="ncu --csv --page raw --print-units base output")
    parser.add_argument("--predicted", required=True, help="a gpu-model-*-predicted.json, or the folder of them")
    parser.add_argument("--target", default="h200", help="the target in the file name, with a folder")
    parser.add_argument("--md", help="write the joined table as Markdown here")
    args = parser.parse_args(argv)
    predicted_path = args.predicted
    if os.path.isdir(predicted_path):
        predicted_path = newest_prediction(predicted_path, args.target)
        if predicted_path is None:
            print(f"ncu_beside.py: no gpu-model-*-{args.target}-predicted.json in {args.predicted}", file=sys.stderr)
            return 2
    for path in (args.csv, predicted_path):
        if not os.path.isfile(path):
            print(f"ncu_beside.py: no file {path}", file=sys.stderr)
            return 2
    measured = first_launches(read_csv(args.csv))
    predicted, duplicates = predicted_launches(predicted_path)
    rows = join(measured, predicted)
    print(f"ncu {os.path.basename(args.csv)} ({len(measured)} kernels) beside {os.path.basename(predicted_path)}; "
          f"measured/predicted, sectors per request of global loads and stores together as the model counts them")
    if duplicates:
        print(f"note: more than one predicted launch named {', '.join(sorted(set(duplicates)))}; the first is used")
    if not rows:
        print(f"warning: no kernel in both (measured: {', '.join(sorted(measured)) or 'none'})")
        return 0
    for r in rows:
        print(line(r))
    print(summary(rows))
    if args.md:
        with open(args.md, "w") as f:
            f.write(f"## ncu beside {os.path.basename(predicted_path)}\n\n" + markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
