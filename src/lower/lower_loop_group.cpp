// Loop-group lowering: one flat loop over the roots' elements, each element's
// value an expression tree built by walking the group backwards from the roots
// (docs/lowering.md); group_expr.h evaluates the values.
#include "lower/lower_loop_group.h"

#include <set>

#include "kir/kernel_builder.h"
#include "lower/group_expr.h"
#include "stitch/error.h"

namespace stitch::lower {
namespace {

using kir::Expr;

class LoopLowerer {
 public:
  LoopLowerer(const Graph& g, const FusionGroup& group, const std::string& name)
      : g_(g), group_(group), kb_(name) {}

  kir::Kernel run() {
    STITCH_ASSERT(group_.kind == GroupKind::Loop, "lower_loop_group: group is not a loop group");
    STITCH_ASSERT(!group_.roots.empty(), "lower_loop_group: group has no roots");
    for (int n : group_.nodes) {
      const Node& node = g_.nodes()[n];
      STITCH_ASSERT(is_loop_lowerable(node.op),
                    "lower_loop_group: op " + std::string(op_name(node.op)) + " of " +
                        g_.value_name(node.output) + " is not supported yet");
    }
    const Shape& shape = g_.type(g_.nodes()[group_.roots.front()].output).shape;
    for (int r : group_.roots) {
      STITCH_ASSERT(g_.type(g_.nodes()[r].output).shape == shape,
                    "lower_loop_group: roots of different shapes (" + g_.value_name(g_.nodes()[r].output) + ")");
    }

    GroupSignature sig = loop_group_signature(g_, group_);
    ex_.declare_params(sig);

    constexpr int64_t kPerBlock = kLoopBlockThreads * kLoopElementsPerThread;
    Expr count = element_count_expr(shape);
    int64_t static_count = 0;
    bool is_static_count = kir::is_int_constant(count, &static_count);
    Expr blocks = is_static_count ? kir::int_const((static_count + kPerBlock - 1) / kPerBlock)
                                  : (count + (kPerBlock - 1)) / kPerBlock;
    // A static count that fills every block needs no tail guard.
    bool guard = !is_static_count || static_count % kPerBlock != 0;
    kb_.launch(blocks, kLoopBlockThreads);
    kb_.grid("blk", blocks, [&](const Expr& b) {
      kb_.block("thr", kLoopBlockThreads, [&](const Expr& t) {
        kb_.loop("part", kir::int_const(kLoopElementsPerThread), kir::LoopLevel::Unroll, [&](const Expr& u) {
          Expr lin = kb_.let("lin", (b * kLoopElementsPerThread + u) * kLoopBlockThreads + t);
          auto body = [&] {
            Index idx = ex_.delinearize(lin, shape, "i");
            for (int r : group_.roots) {
              ValueId out = g_.nodes()[r].output;
              kb_.store(ex_.buffer(out), idx, ex_.eval(out, idx));
            }
          };
          if (guard) {
            kb_.if_then(kir::op(OpKind::Lt, {lin, count}), body);
          } else {
            body();
          }
        });
      });
    });
    return kb_.finish();
  }

 private:
  const Graph& g_;
  const FusionGroup& group_;
  kir::KernelBuilder kb_;
  GroupExpr ex_{g_, group_, kb_};
};

}  // namespace

bool is_loop_lowerable(OpKind op) {
  if (is_elementwise(op)) return true;
  switch (op) {
    case OpKind::Broadcast:
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::Slice:
    case OpKind::Concat:
    case OpKind::Pad:
    case OpKind::Iota:
    case OpKind::Constant: return true;
    default: return false;
  }
}

GroupSignature loop_group_signature(const Graph& g, const FusionGroup& group) {
  GroupSignature sig;
  std::set<int> seen;
  std::set<std::string> symbols;
  auto note_symbols = [&](ValueId v) {
    for (const Dim& d : g.type(v).shape) {
      if (d.is_symbolic()) symbols.insert(d.name());
    }
  };
  for (int n : group.nodes) {
    for (ValueId in : g.nodes()[n].inputs) {
      int producer = g.value(in).producer;
      if ((producer >= 0 && group.contains(producer)) || !seen.insert(in.index).second) continue;
      sig.inputs.push_back(in);
      note_symbols(in);
    }
  }
  for (int r : group.roots) {
    sig.outputs.push_back(g.nodes()[r].output);
    note_symbols(g.nodes()[r].output);
  }
  sig.symbols.assign(symbols.begin(), symbols.end());
  return sig;
}

kir::Kernel lower_loop_group(const Graph& g, const FusionGroup& group, const std::string& kernel_name) {
  return LoopLowerer(g, group, kernel_name).run();
}

}  // namespace stitch::lower
