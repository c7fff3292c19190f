// Shared by the CPU back end's differential suites (random graphs, workload
// corpus): the documented allowance of each output (docs/testing.md), an
// output-by-output comparison with the interpreter; and, through
// scratch_directory.h, a kernel cache directory per test run.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "scratch_directory.h"
#include "stitch/graph.h"
#include "stitch/interpreter.h"
#include "stitch/tensor.h"
#include "tensor/compare.h"

namespace stitch::testing {

// "" when every output of `got` matches `want` under the allowance
// stitch::output_allowance (src/tensor/compare.h) gives it in `g` (the graph
// the interpreter ran), else what differs, output by output.
std::string compare_with_interpreter_outputs(const Graph& g, const SymbolBindings& symbols,
                                             const std::vector<Tensor>& got, const std::vector<Tensor>& want);

// The same against stitch::interpret_with_error_bounds' outputs, each element
// allowed the larger of that allowance and its propagated bound.
std::string compare_with_interpreter_outputs(const Graph& g, const SymbolBindings& symbols,
                                             const std::vector<Tensor>& got, const BoundedReference& want);

// "" when `run` raises a UserError whose message the interpreter's own
// UserError (raised by `reference`) contains, else what went wrong: a
// back end rejects exactly the input the interpreter rejects, in its words.
std::string rejects_like_interpreter(const std::function<void()>& reference, const std::function<void()>& run);


}  // namespace stitch::testing
