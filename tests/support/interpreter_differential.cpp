#include "interpreter_differential.h"

#include <set>
#include <stdexcept>
#include <system_error>

#include "stitch/error.h"
#include "stitch/ops.h"

namespace stitch::testing {

namespace {

std::string compare_outputs(const Graph& g, const SymbolBindings& symbols, const std::vector<Tensor>& got,
                            const std::vector<Tensor>& want, const std::vector<Tensor>* bounds) {
  if (got.size() != want.size()) {
    return "got " + std::to_string(got.size()) + " outputs, want " + std::to_string(want.size());
  }
  std::string failures;
  for (size_t i = 0; i < want.size(); ++i) {
    ErrorAllowance allowance = output_allowance(g, g.outputs()[i].value, symbols);
    TensorComparison c = bounds ? compare_with_interpreter(got[i], want[i], allowance, (*bounds)[i])
                                : compare_with_interpreter(got[i], want[i], allowance);
    if (!c.ok) failures += "output " + g.outputs()[i].name + ": " + c.describe() + "\n";
  }
  return failures;
}

}  // namespace

std::string compare_with_interpreter_outputs(const Graph& g, const SymbolBindings& symbols,
                                             const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  return compare_outputs(g, symbols, got, want, nullptr);
}

std::string compare_with_interpreter_outputs(const Graph& g, const SymbolBindings& symbols,
                                             const std::vector<Tensor>& got, const BoundedReference& want) {
  return compare_outputs(g, symbols, got, want.outputs, &want.bounds);
}

std::string rejects_like_interpreter(const std::function<void()>& reference, const std::function<void()>& run) {
  std::string want;
  try {
    reference();
  } catch (const UserError& e) {
    want = e.what();
  }
  if (want.empty()) return "the interpreter accepted the input";
  try {
    run();
  } catch (const UserError& e) {
    if (want.find(e.what()) != std::string::npos) return "";
    return std::string("rejected with '") + e.what() + "', the interpreter with '" + want + "'";
  }
  return "accepted input the interpreter rejects: " + want;
}


}  // namespace stitch::testing
