#include "gpu_differential.h"

#include <stdlib.h>

#include <cstdint>
#include <stdexcept>
#include <system_error>

#include "runtime/cpu/cpu_compiler.h"
#include "stitch/error.h"
#include "stitch/interpreter.h"
#include "stitch/ops.h"
#include "tensor/compare.h"

namespace stitch::gpu_testing {

std::string check_against_interpreter(runtime::cuda::CudaExecutable& exe, const Graph& source,
                                      const SymbolBindings& symbols, const std::vector<Tensor>& inputs) {
  BoundedReference want;
  std::string rejected;
  try {
    want = interpret_with_error_bounds(source, inputs);
  } catch (const UserError& e) {
    rejected = e.what();
  }
  try {
    std::vector<Tensor> got = exe.run(inputs);
    if (!rejected.empty()) return "the interpreter rejects the inputs (" + rejected + "), the GPU accepted them";
    return testing::compare_with_interpreter_outputs(source, symbols, got, want);
  } catch (const UserError& e) {
    if (!rejected.empty()) return "";
    return std::string("the GPU rejected inputs the interpreter accepts: ") + e.what();
  } catch (const std::exception& e) {
    return "exception on the GPU: " + describe_failure(e);
  }
}

std::vector<Tensor> seeded_inputs(const Graph& g, uint64_t seed, const SymbolBindings& symbols) {
  std::vector<Tensor> inputs;
  for (ValueId p : g.params()) {
    Tensor t(g.type(p).dtype, concrete_shape(g.type(p).shape, symbols));
    fill_random(t, seed++);
    inputs.push_back(std::move(t));
  }
  // A parameter that indexes a gather is folded into [-extent, extent), so
  // the gather runs instead of being rejected on every seed (the rejection
  // has a test of its own).
  for (const Node& n : g.nodes()) {
    if (n.op != OpKind::Gather) continue;
    const std::vector<int64_t> data = concrete_shape(g.type(n.inputs[0]).shape, symbols);
    const AttrValue* axis_attr = n.attrs.find("axis");
    int64_t axis = axis_attr ? axis_attr->as_int() : 0;
    if (axis < 0) axis += static_cast<int64_t>(data.size());
    const int64_t extent = data.at(static_cast<size_t>(axis));
    for (size_t i = 0; i < g.params().size(); ++i) {
      if (g.params()[i] != n.inputs[1] || extent == 0) continue;
      Tensor& index = inputs[i];
      for (int64_t e = 0; e < index.numel(); ++e) {
        const int64_t folded = ((index.get_i64(e) % (2 * extent)) + 2 * extent) % (2 * extent);
        index.set_i64(e, folded - extent);
      }
    }
  }
  return inputs;
}

std::string describe_failure(const std::exception& e) {
  std::string text = e.what();
  if (const auto* compile = dynamic_cast<const runtime::cpu::CompileError*>(&e)) {
    constexpr size_t kLogChars = 4000;
    text += "\n" + compile->diagnostics().substr(0, kLogChars);
  }
  return text;
}

std::string describe_bindings(const SymbolBindings& symbols) {
  std::string text;
  for (const auto& [name, extent] : symbols) {
    text += (text.empty() ? "" : ", ") + name + "=" + std::to_string(extent);
  }
  return text.empty() ? "static" : text;
}

}  // namespace stitch::gpu_testing
