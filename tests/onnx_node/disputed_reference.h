// Node test cases whose reference outputs in onnx 1.12 follow a rule that
// Stitch deliberately does not follow. For each, the runner replaces the
// reference outputs with ones recomputed here from the inputs by the rule
// Stitch does follow, after checking that the two disagree only as the
// dispute says. docs/onnx-conformance.md, Disputed references, lists them.
#pragma once

#include <string>
#include <vector>

#include "node_case.h"

namespace stitch::onnx_node {

// Whether `case_name` is disputed; if so, rewrites every data set's outputs
// and returns true. Throws UserError when a reference differs from the
// recomputed output by more than the dispute explains (then the data is not
// what the dispute assumed, and the case must fail).
bool apply_disputed_reference(const std::string& case_name, std::vector<DataSet>& sets);

}  // namespace stitch::onnx_node
