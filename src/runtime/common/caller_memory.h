// Running on memory the caller owns (Executable::run_into): what a back end
// that takes tensors needs to serve it by copying.
#pragma once

#include <vector>

#include "stitch/runtime.h"
#include "stitch/tensor.h"

namespace stitch::runtime {

// Copies of the caller's arrays.
std::vector<Tensor> tensors_of(const std::vector<ArrayView>& views);
// Each output copied into the memory `output` gives for it.
void copy_outputs(const std::vector<Tensor>& outputs, const OutputMemory& output);

}  // namespace stitch::runtime
