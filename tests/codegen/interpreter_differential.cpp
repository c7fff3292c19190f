#include "interpreter_differential.h"

#include <stdlib.h>

#include <set>
#include <stdexcept>
#include <system_error>

#include "stitch/ops.h"

namespace stitch::testing {

namespace {

// div, sqrt and rem are correctly rounded (docs/semantics.md, "What back ends
// may differ in"); every other heavy elementwise op may be a few ulp off.
bool is_transcendental(OpKind op) {
  return op_info(op).category == OpCategory::HeavyElementwise && op != OpKind::Div && op != OpKind::Sqrt &&
         op != OpKind::Rem;
}

int64_t numel_of(const Graph& g, ValueId v, const SymbolBindings& symbols) {
  int64_t n = 1;
  for (int64_t d : concrete_shape(g.type(v).shape, symbols)) n *= d;
  return n;
}

}  // namespace

ErrorAllowance output_allowance(const Graph& g, ValueId output, const SymbolBindings& symbols) {
  ErrorAllowance a;
  std::set<int> seen;
  std::vector<int> work;
  if (g.value(output).producer >= 0) work.push_back(g.value(output).producer);
  while (!work.empty()) {
    int n = work.back();
    work.pop_back();
    if (!seen.insert(n).second) continue;
    const Node& node = g.nodes()[n];
    if (is_transcendental(node.op)) a.transcendental = true;
    if (!node.inputs.empty() && is_float(g.type(node.inputs[0]).dtype)) {
      if (op_info(node.op).category == OpCategory::Reduction) {
        int64_t out = numel_of(g, node.output, symbols);
        a.reduction_length += out > 0 ? numel_of(g, node.inputs[0], symbols) / out : 0;
      } else if (node.op == OpKind::Dot) {
        std::vector<int64_t> lhs = concrete_shape(g.type(node.inputs[0]).shape, symbols);
        a.reduction_length += lhs.empty() ? 1 : lhs.back();
      }
    }
    for (ValueId in : node.inputs) {
      if (g.value(in).producer >= 0) work.push_back(g.value(in).producer);
    }
  }
  return a;
}

std::string compare_with_interpreter_outputs(const Graph& g, const SymbolBindings& symbols,
                                             const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  if (got.size() != want.size()) {
    return "got " + std::to_string(got.size()) + " outputs, want " + std::to_string(want.size());
  }
  std::string failures;
  for (size_t i = 0; i < want.size(); ++i) {
    ErrorAllowance allowance = output_allowance(g, g.outputs()[i].value, symbols);
    TensorComparison c = compare_with_interpreter(got[i], want[i], allowance);
    if (!c.ok) failures += "output " + g.outputs()[i].name + ": " + c.describe() + "\n";
  }
  return failures;
}

ScratchDirectory::ScratchDirectory(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a directory like " + pattern);
  path_ = pattern;
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace stitch::testing
