#!/usr/bin/env python3
"""Writes the tiny numpy-made .npy files that tests/tensor/npy_test.cpp reads.

They are the independent truth for Stitch's .npy reader and writer: numpy wrote
them, and the test hard-codes the values they hold. Run from anywhere with a
Python that has numpy (Debian's /usr/bin/python3 does); bf16_ml_dtypes.npy also
needs the ml_dtypes package and is kept as committed when it is missing.
"""
import pathlib

import numpy as np
from numpy.lib import format as npy_format

GOLDEN = pathlib.Path(__file__).resolve().parent.parent / "tests" / "tensor" / "golden"


def save(name, array):
    np.save(GOLDEN / name, array, allow_pickle=False)


def write_version(name, array, version):
    with open(GOLDEN / name, "wb") as f:
        npy_format.write_array(f, array, version=version, allow_pickle=False)


def main():
    GOLDEN.mkdir(parents=True, exist_ok=True)
    save("f32_2x3.npy",
         np.array([[0.0, 1.0, -2.5], [0.1, 2.0**-149, np.finfo(np.float32).max]], dtype=np.float32))
    save("i64_scalar.npy", np.array(-(2**53 + 1), dtype=np.int64))
    save("bool_5.npy", np.array([True, False, True, True, False]))
    save("f16_5.npy", np.array([1.0, 65504.0, 2.0**-24, -0.0, 0.1], dtype=np.float16))
    save("i8_3.npy", np.array([-128, 0, 127], dtype=np.int8))
    save("i32_2x0.npy", np.zeros((2, 0), dtype=np.int32))
    save("f64_special.npy", np.array([np.inf, -np.inf, np.nan, 1e308, 5e-324], dtype=np.float64))
    # Plain numpy has no bfloat16: bfloat16 bits viewed as 2-byte void save as '|V2'.
    save("bf16_void.npy", np.array([0x3F80, 0xC000, 0x7F80], dtype="<u2").view("V2"))
    write_version("f32_v2.npy", np.array([1.5, -3.0], dtype=np.float32), (2, 0))
    write_version("i32_v3.npy", np.array([7, -7], dtype=np.int32), (3, 0))

    # Files Stitch must reject.
    save("f32_fortran_2x3.npy", np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
    save("f32_big_endian.npy", np.array([1.0, 2.0], dtype=">f4"))
    save("u8_3.npy", np.array([1, 2, 3], dtype=np.uint8))

    try:
        import ml_dtypes
    except ImportError:
        print("ml_dtypes not installed: bf16_ml_dtypes.npy left as it is")
    else:
        save("bf16_ml_dtypes.npy", np.array([1.0, -2.0, 0.5], dtype=ml_dtypes.bfloat16))


if __name__ == "__main__":
    main()
