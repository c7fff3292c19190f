#include "single_op.h"

#include <string>

#include "stitch/builder.h"
#include "stitch/interpreter.h"

namespace stitch::testing {

Tensor run_single_op(std::string_view op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  GraphBuilder b(std::string(op) + "_graph");
  std::vector<ValueId> params;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Shape shape(inputs[i].shape().begin(), inputs[i].shape().end());
    params.push_back(b.param("in" + std::to_string(i), inputs[i].dtype(), shape));
  }
  b.output(b.op(op, std::vector<Operand>(params.begin(), params.end()), attrs, "out"));
  return interpret(b.finish(), inputs).at(0);
}

}  // namespace stitch::testing
