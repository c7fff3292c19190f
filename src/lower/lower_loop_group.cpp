// Loop-group lowering: one flat loop over the roots' elements, each element's
// value an expression tree built by walking the group backwards from the roots
// (docs/lowering.md). Layout ops never move data here: they only rewrite the
// index at which their operand is evaluated.
#include "lower/lower_loop_group.h"

#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "kir/kernel_builder.h"
#include "kir/printer.h"
#include "stitch/error.h"

namespace stitch::lower {
namespace {

using kir::Expr;
using Index = std::vector<Expr>;

// KIR names are emitted unchanged as C++ identifiers, so graph names are
// reduced to [A-Za-z0-9_] and given a prefix no internal name uses.
std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return out;
}

std::string symbol_param(const std::string& symbol) { return "sym_" + sanitize(symbol); }

// Index arithmetic with literal folding, so static shapes give short trees.
Expr add_i(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (kir::is_int_constant(a, &x) && kir::is_int_constant(b, &y)) return kir::int_const(x + y);
  if (kir::is_int_constant(a, &x) && x == 0) return b;
  if (kir::is_int_constant(b, &y) && y == 0) return a;
  return a + b;
}
Expr sub_i(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (kir::is_int_constant(a, &x) && kir::is_int_constant(b, &y)) return kir::int_const(x - y);
  if (kir::is_int_constant(b, &y) && y == 0) return a;
  return a - b;
}
Expr mul_i(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  if (kir::is_int_constant(a, &x) && kir::is_int_constant(b, &y)) return kir::int_const(x * y);
  if (kir::is_int_constant(a, &x) && x == 1) return b;
  if (kir::is_int_constant(b, &y) && y == 1) return a;
  if ((kir::is_int_constant(a, &x) && x == 0) || (kir::is_int_constant(b, &y) && y == 0)) return kir::int_const(0);
  return a * b;
}

Expr dim_expr(const Dim& d) { return d.is_static() ? kir::int_const(d.extent()) : kir::var(symbol_param(d.name())); }

Expr element_count_expr(const Shape& s) {
  Expr n = kir::int_const(1);
  for (const Dim& d : s) n = mul_i(n, dim_expr(d));
  return n;
}

Expr literal(double value, DType dtype) {
  if (is_bool(dtype)) return kir::bool_const(value != 0.0);
  if (is_integer(dtype)) return kir::int_const(static_cast<int64_t>(value), dtype);
  return kir::float_const(value, dtype);
}

Expr literal(const AttrValue& value, DType dtype) {
  if (value.is_bool()) return kir::bool_const(value.as_bool());
  if (value.is_int() && is_integer(dtype)) return kir::int_const(value.as_int(), dtype);
  return literal(value.as_number(), dtype);
}

class LoopLowerer {
 public:
  LoopLowerer(const Graph& g, const FusionGroup& group, const std::string& name)
      : g_(g), group_(group), kb_(name), in_group_(group.nodes.begin(), group.nodes.end()) {}

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
    for (const std::string& s : sig.symbols) kb_.scalar_param(symbol_param(s));
    std::set<std::string> used;
    auto declare = [&](ValueId v, const char* prefix, kir::Access access) {
      std::string name = prefix + sanitize(g_.value_name(v));
      for (int k = 1; used.count(name); ++k) name = prefix + sanitize(g_.value_name(v)) + "_" + std::to_string(k);
      used.insert(name);
      buffer_of_[v.index] = name;
      Index dims;
      for (const Dim& d : g_.type(v).shape) dims.push_back(dim_expr(d));
      kb_.buffer_param(name, g_.type(v).dtype, dims, access);
    };
    for (ValueId v : sig.inputs) declare(v, "in_", kir::Access::Read);
    for (ValueId v : sig.outputs) declare(v, "out_", kir::Access::Write);

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
            Index idx = delinearize(lin, shape, true);
            for (int r : group_.roots) {
              ValueId out = g_.nodes()[r].output;
              kb_.store(buffer_of_.at(out.index), idx, eval(out, idx));
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
  std::string fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }

  // C-order multi-index of `lin` in `shape`, one local per dimension. The
  // output index is named by dimension (i0 outermost) so printed kernels read
  // like the shape; inner re-indexings take fresh names.
  Index delinearize(const Expr& lin, const Shape& shape, bool output_index) {
    int rank = static_cast<int>(shape.size());
    Index idx(rank);
    Expr stride = kir::int_const(1);
    for (int k = rank - 1; k >= 0; --k) {
      int64_t s = 0;
      Expr q = kir::is_int_constant(stride, &s) && s == 1 ? lin : lin / stride;
      Expr v = k == 0 ? q : q % dim_expr(shape[k]);
      if (shape[k].is_static() && shape[k].extent() == 1) v = kir::int_const(0);
      idx[k] = kb_.let(output_index ? "i" + std::to_string(k) : fresh("j"), v);
      stride = mul_i(stride, dim_expr(shape[k]));
    }
    return idx;
  }

  Expr linearize(const Index& idx, const Shape& shape) {
    Expr lin = kir::int_const(0);
    for (size_t k = 0; k < shape.size(); ++k) lin = add_i(mul_i(lin, dim_expr(shape[k])), idx[k]);
    return lin;
  }

  std::string memo_key(ValueId v, const Index& idx) const {
    std::string key = std::to_string(v.index);
    for (const Expr& e : idx) key += "|" + kir::print_expr(e);
    return key;
  }

  const Expr* find_memo(const std::string& key) const {
    for (auto it = memo_.rbegin(); it != memo_.rend(); ++it) {
      auto found = it->find(key);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }

  // Locals defined inside a branch are out of scope after it.
  void scoped(const std::function<void()>& fn) {
    memo_.emplace_back();
    fn();
    memo_.pop_back();
  }

  Expr eval(ValueId v, const Index& idx) {
    int producer = g_.value(v).producer;
    if (producer < 0 || !in_group_.count(producer)) return kb_.load(buffer_of_.at(v.index), idx);
    std::string key = memo_key(v, idx);
    if (const Expr* e = find_memo(key)) return *e;
    Expr result = eval_node(g_.nodes()[producer], idx);
    memo_.back().emplace(key, result);
    return result;
  }

  Expr eval_node(const Node& node, const Index& idx) {
    const TensorType& type = g_.type(node.output);
    const Attrs& attrs = node.attrs;
    switch (node.op) {
      case OpKind::Broadcast: {
        const Shape& in = g_.type(node.inputs[0]).shape;
        size_t lead = idx.size() - in.size();
        Index j;
        for (size_t k = 0; k < in.size(); ++k) {
          bool repeated = in[k].is_static() && in[k].extent() == 1;
          j.push_back(repeated ? kir::int_const(0) : idx[lead + k]);
        }
        return eval(node.inputs[0], j);
      }
      case OpKind::Transpose: {
        size_t rank = idx.size();
        AttrValue::Ints perm;
        if (const AttrValue* p = attrs.find("perm")) perm = p->as_ints();
        for (size_t k = perm.size(); k < rank; ++k) perm.push_back(static_cast<int64_t>(rank - 1 - k));
        Index j(rank);
        for (size_t k = 0; k < rank; ++k) j[perm[k]] = idx[k];
        return eval(node.inputs[0], j);
      }
      case OpKind::Reshape: {
        const Shape& in = g_.type(node.inputs[0]).shape;
        Expr lin = linearize(idx, type.shape);
        if (!kir::is_int_constant(lin)) lin = kb_.let(fresh("r"), lin);
        return eval(node.inputs[0], delinearize(lin, in, false));
      }
      case OpKind::Slice: {
        const AttrValue::Ints& start = attrs.get("start").as_ints();
        const AttrValue::Ints& step = attrs.get("step").as_ints();
        Index j;
        for (size_t k = 0; k < idx.size(); ++k) {
          j.push_back(add_i(kir::int_const(start[k]), mul_i(idx[k], kir::int_const(step[k]))));
        }
        return eval(node.inputs[0], j);
      }
      case OpKind::Iota: {
        Expr i = idx[attrs.get("axis").as_int()];
        return type.dtype == DType::i64 ? i : kir::cast(i, type.dtype);
      }
      case OpKind::Constant: return literal(attrs.get("value"), type.dtype);
      case OpKind::Concat: return eval_concat(node, idx);
      case OpKind::Pad: return eval_pad(node, idx);
      default: break;
    }
    Index operands;
    for (ValueId in : node.inputs) operands.push_back(eval(in, idx));
    Expr e = node.op == OpKind::Cast ? kir::cast(operands[0], attrs.get("to").as_dtype())
                                     : kir::op(node.op, operands);
    return kb_.let(fresh("e"), e);
  }

  // An if-chain rather than a select: a select would evaluate (and load) every
  // operand, out of bounds for all but one.
  Expr eval_concat(const Node& node, const Index& idx) {
    int64_t axis = node.attrs.get("axis").as_int();
    Expr result = kb_.let(fresh("c"), g_.type(node.output).dtype);
    std::function<void(size_t, Expr)> branch = [&](size_t k, const Expr& offset) {
      ValueId in = node.inputs[k];
      auto take = [&] {
        scoped([&] {
          Index j = idx;
          j[axis] = sub_i(idx[axis], offset);
          kb_.assign(result, eval(in, j));
        });
      };
      if (k + 1 == node.inputs.size()) {
        take();
        return;
      }
      Expr end = add_i(offset, dim_expr(g_.type(in).shape[axis]));
      kb_.if_then(kir::op(OpKind::Lt, {idx[axis], end}), take, [&] { branch(k + 1, end); });
    };
    branch(0, kir::int_const(0));
    return result;
  }

  Expr eval_pad(const Node& node, const Index& idx) {
    const AttrValue::Ints& low = node.attrs.get("low").as_ints();
    const Shape& in = g_.type(node.inputs[0]).shape;
    DType dtype = g_.type(node.output).dtype;
    const AttrValue* value = node.attrs.find("value");
    Expr fill = value ? literal(*value, dtype) : literal(0.0, dtype);
    Index j;
    Expr inside = kir::bool_const(true);
    for (size_t k = 0; k < idx.size(); ++k) {
      j.push_back(sub_i(idx[k], kir::int_const(low[k])));
      Expr ok = kir::op(OpKind::And, {kir::op(OpKind::Ge, {j[k], kir::int_const(0)}),
                                      kir::op(OpKind::Lt, {j[k], dim_expr(in[k])})});
      inside = k == 0 ? ok : kir::op(OpKind::And, {inside, ok});
    }
    Expr result = kb_.let(fresh("p"), fill);
    kb_.if_then(inside, [&] { scoped([&] { kb_.assign(result, eval(node.inputs[0], j)); }); });
    return result;
  }

  const Graph& g_;
  const FusionGroup& group_;
  kir::KernelBuilder kb_;
  std::unordered_set<int> in_group_;
  std::unordered_map<int, std::string> buffer_of_;
  std::vector<std::map<std::string, Expr>> memo_{1};
  int counter_ = 0;
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
