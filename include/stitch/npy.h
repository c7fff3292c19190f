// numpy .npy files (format version 1.0-3.0): little-endian, C order.
#pragma once

#include <string>

#include "stitch/tensor.h"

namespace stitch {

// Throws UserError("PATH: ...") for a missing file, a bad magic or header, Fortran
// order, big-endian data, a dtype Stitch has no type for, or a truncated payload.
Tensor read_npy(const std::string& path);
Tensor parse_npy(const std::string& bytes, const std::string& what);  // `what` names the source in errors
// Writes version 1.0 (2.0 when the header needs it), C order, little-endian,
// byte for byte what np.save writes. numpy has no bfloat16: bf16 is written
// with descr '<V2', as np.save writes an ml_dtypes.bfloat16 array (docs/npy.md).
void write_npy(const std::string& path, const Tensor& t);
std::string serialize_npy(const Tensor& t);

}  // namespace stitch
