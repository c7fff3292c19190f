#include "ir/conv_expand.h"

#include <string>
#include <vector>

#include "ir/canonicalize.h"
#include "ir/composites_nn.h"
#include "ir/rewriter.h"
#include "stitch/builder.h"

namespace stitch {

namespace {

// The composite of conv node `n` built on its own, its operands as the
// parameters, then copied into `rw`'s graph in place of the node; a
// channels-last conv between transposes to and from [N, C, spatial...].
ValueId inline_conv(Rewriter& rw, const Graph& g, const Node& n) {
  std::vector<ValueId> in = rw.mapped_inputs(n);
  const std::string base = g.value_name(n.output);
  const bool channels_last = n.attrs.get("channels_last").as_bool();
  const size_t rank = rw.dst().type(in[0]).rank();
  if (channels_last) {
    // x and the side input, laid out like the result.
    const ConvOperands operands = conv_operands(n);
    for (size_t i : {size_t{0}, operands.side_index()}) {
      if (i == 0 || operands.side) {
        in[i] = rw.emit(OpKind::Transpose, {in[i]}, {{"perm", AttrValue(channels_first_perm(rank))}}, base + "_nchw", n.loc);
      }
    }
  }
  GraphBuilder sub("conv");
  std::vector<ValueId> params;
  for (size_t i = 0; i < in.size(); ++i) {
    const TensorType& t = rw.dst().type(in[i]);
    params.push_back(sub.param("operand_" + std::to_string(i), t.dtype, t.shape));
  }
  sub.output(expand_conv(sub, params, n.attrs), "y");
  const Graph body = sub.finish();
  std::vector<ValueId> map(body.num_values());
  for (size_t i = 0; i < params.size(); ++i) map[body.params()[i].index] = in[i];
  for (const Node& m : body.nodes()) {
    std::vector<ValueId> operands;
    for (ValueId v : m.inputs) operands.push_back(map[v.index]);
    map[m.output.index] = rw.emit(m.op, std::move(operands), m.attrs, base + "_" + body.value_name(m.output), n.loc);
  }
  const ValueId y = map[body.outputs().at(0).value.index];
  if (!channels_last) return y;
  return rw.emit(OpKind::Transpose, {y}, {{"perm", AttrValue(channels_last_perm(rank))}}, base + "_nhwc", n.loc);
}

}  // namespace

Graph expand_convs(const Graph& g, const std::function<bool(const Graph&, const Node&)>& keep) {
  bool any = false;
  for (const Node& n : g.nodes()) any = any || (n.op == OpKind::Conv && !keep(g, n));
  if (!any) return g;
  Rewriter rw(g);
  for (const Node& n : g.nodes()) {
    rw.bind(n, n.op == OpKind::Conv && !keep(g, n) ? inline_conv(rw, g, n) : rw.copy(n, rw.mapped_inputs(n)));
  }
  return canonicalize(rw.finish());
}

}  // namespace stitch
