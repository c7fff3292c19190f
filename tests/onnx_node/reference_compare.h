// The ONNX backend test runner's own comparison (onnx/backend/test/runner:
// numpy's assert_allclose at rtol 1e-3, atol 1e-7): |got - want| <= atol +
// rtol |want| per float element, NaN matches NaN, an infinity only itself;
// integers and bools exactly; dtype and shape must be equal.
#pragma once

#include <string>
#include <vector>

#include "stitch/tensor.h"
#include "tensor/compare.h"

namespace stitch::onnx_node {

inline constexpr double kRelativeTolerance = 1e-3;
inline constexpr double kAbsoluteTolerance = 1e-7;

TensorComparison compare_with_reference(const Tensor& got, const Tensor& want);

// "" when every output matches its reference; else what differs, output by output.
std::string compare_outputs(const std::vector<Tensor>& got, const std::vector<Tensor>& want);

}  // namespace stitch::onnx_node
