#!/usr/bin/python3
"""Compares the .npy files of a result directory with those of a reference one.

    /usr/bin/python3 scripts/compare_npy.py EXPECTED_DIR GOT_DIR [--rtol R] [--atol A]

Every EXPECTED_DIR/NAME.npy must have a GOT_DIR/NAME.npy of the same dtype and
shape whose elements all satisfy |got - want| <= atol + rtol * |want| (NaN
only where the reference has NaN). Prints one line per file with the largest
absolute and relative error; exits 1 on any mismatch, 2 on missing files.
Must run under /usr/bin/python3 (Debian's, which has python3-numpy).
"""
import argparse
import os
import sys

import numpy as np


def compare(name, want, got, rtol, atol):
    if want.dtype != got.dtype or want.shape != got.shape:
        return (f"{name}: got {got.dtype}{list(got.shape)}, "
                f"want {want.dtype}{list(want.shape)}")
    if want.size == 0:
        print(f"{name}: empty, ok")
        return None
    want64 = want.astype(np.float64)
    got64 = got.astype(np.float64)
    nan_mismatch = np.isnan(want64) != np.isnan(got64)
    both = ~np.isnan(want64) & ~np.isnan(got64)
    abs_err = np.where(both, np.abs(got64 - want64), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_err = np.where(both & (want64 != 0), abs_err / np.abs(want64), 0.0)
    bad = nan_mismatch | (abs_err > atol + rtol * np.abs(np.where(both, want64, 0.0)))
    print(f"{name}: {want.dtype}{list(want.shape)} max_abs_err {abs_err.max():.3e} "
          f"max_rel_err {rel_err.max():.3e} max_abs_want {np.abs(want64[both]).max():.3e} "
          f"(rtol {rtol:g}, atol {atol:g})")
    if bad.any():
        first = [tuple(int(i) for i in idx) for idx in np.argwhere(bad)[:5]]
        details = ", ".join(f"{idx}: got {got[idx]!r} want {want[idx]!r}" for idx in first)
        return f"{name}: {int(bad.sum())} of {want.size} elements differ: {details}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("expected_dir")
    parser.add_argument("got_dir")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-5)
    args = parser.parse_args()

    names = sorted(f for f in os.listdir(args.expected_dir) if f.endswith(".npy"))
    if not names:
        print(f"{args.expected_dir}: no .npy files", file=sys.stderr)
        return 2
    failures = []
    for file_name in names:
        got_path = os.path.join(args.got_dir, file_name)
        if not os.path.exists(got_path):
            print(f"{got_path}: missing", file=sys.stderr)
            return 2
        want = np.load(os.path.join(args.expected_dir, file_name))
        got = np.load(got_path)
        failure = compare(file_name[:-len(".npy")], want, got, args.rtol, args.atol)
        if failure:
            failures.append(failure)
    for failure in failures:
        print("MISMATCH " + failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
