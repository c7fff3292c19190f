#include "runtime/common/launch_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>

#include "runtime/common/input_checks.h"
#include "stitch/error.h"
#include "stitch/text.h"

namespace stitch::runtime {

int64_t value_bytes(const Graph& g, ValueId v, const SymbolBindings& bindings) {
  int64_t n = dtype_size(g.type(v).dtype);
  for (int64_t d : concrete_shape(g.type(v).shape, bindings)) n *= d;
  return n;
}

StepValues signature_values(const kir::GroupSignature& signature) {
  StepValues values;
  for (ValueId v : signature.inputs) values.reads.push_back(v.index);
  for (ValueId v : signature.outputs) values.writes.push_back(v.index);
  return values;
}

StepValues signature_values(const kir::GroupSignature& dot, const kir::GroupSignature& epilogue) {
  StepValues values = signature_values(dot);
  std::set<int> written(values.writes.begin(), values.writes.end());
  for (ValueId v : epilogue.inputs) {
    if (!written.count(v.index)) values.reads.push_back(v.index);
  }
  for (ValueId v : epilogue.outputs) values.writes.push_back(v.index);
  return values;
}

}  // namespace stitch::runtime
