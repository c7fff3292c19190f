#include "ir/widen_floats.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/rewriter.h"

namespace stitch {

namespace {

bool narrow_float(DType t) { return t == DType::f16 || t == DType::bf16; }

// Ops computed in f32 when an operand is a narrow float: their results are
// arithmetic on the operands' values.
bool computes(OpKind op) {
  if (op == OpKind::Cast || op == OpKind::ArgMax || op == OpKind::ArgMin) return false;
  return is_elementwise(op) || is_reduction(op);
}

// Ops that move or replicate elements: exact in any float dtype, so they
// carry a widened operand's f32 on.
bool moves(OpKind op) {
  const OpCategory c = op_info(op).category;
  return c == OpCategory::Broadcast || c == OpCategory::Layout || c == OpCategory::Gather;
}

class Widener {
 public:
  explicit Widener(const Graph& g) : g_(g), rw_(g) {
    for (const GraphOutput& o : g.outputs()) returned_.insert(o.value.index);
  }

  Graph run() {
    for (const Node& n : g_.nodes()) rw_.bind(n, rewrite(n));
    // The graph's results in their declared dtypes.
    for (const GraphOutput& o : g_.outputs()) {
      const int producer = g_.value(o.value).producer;
      if (producer >= 0) rw_.bind(g_.nodes()[static_cast<size_t>(producer)], as_written(o.value));
    }
    return rw_.finish();
  }

 private:
  ValueId rewrite(const Node& n) {
    if (n.op == OpKind::Cast) return cast(n);
    bool narrow_input = false, widened_input = false;
    for (ValueId v : n.inputs) {
      narrow_input = narrow_input || narrow_float(g_.type(v).dtype);
      widened_input = widened_input || widened(v);
    }
    std::vector<ValueId> inputs;
    if ((computes(n.op) && narrow_input) || (moves(n.op) && widened_input)) {
      for (ValueId v : n.inputs) inputs.push_back(wide(v));
    } else {
      for (ValueId v : n.inputs) inputs.push_back(as_written(v));
    }
    return rw_.copy(n, std::move(inputs));
  }

  // A cast of a float to f16 or bf16 is kept in f32 like any narrow value the
  // graph computes (a cast of an f32 value is that value); a cast to f32 of a
  // value already in f32 is that value. Other casts are as written.
  ValueId cast(const Node& n) {
    const DType to = n.attrs.get("to").as_dtype();
    const ValueId x = read(n.inputs[0]);
    const DType from = rw_.dst().type(x).dtype;
    if (narrow_float(to) && (from == DType::f32 || from == DType::f64)) {
      if (from == DType::f32) return x;
      return convert(x, DType::f32, g_.value_name(n.output) + "_f32");
    }
    if (from == to) return x;
    return rw_.copy(n, {x});
  }

  bool widened(ValueId v) const { return rw_.dst().type(rw_.mapped(v)).dtype != g_.type(v).dtype; }

  // `v` as the graph's ops read it: a value the graph returns is read as
  // returned, rounded to its dtype (and widened again), so that what reads it
  // in the graph and what reads it outside see one value; a reduction of a
  // returned value then reads the written result rather than an f32 copy of
  // it (a bias gradient beside the GELU backward that returns its operand).
  ValueId read(ValueId v) {
    if (!widened(v) || !returned_.count(v.index)) return rw_.mapped(v);
    auto [it, fresh] = wide_.try_emplace(v.index);
    if (fresh) it->second = convert(as_written(v), DType::f32, g_.value_name(v) + "_f32");
    return it->second;
  }

  // `v` in f32 where it is a narrow float, else as it is. A constant the
  // narrow dtype holds exactly becomes an f32 constant rather than a cast, so
  // that kernels see a literal (a cast of one is a value of its own, and the
  // CPU emitter ends a lane loop at it).
  ValueId wide(ValueId v) {
    const ValueId m = read(v);
    if (!narrow_float(rw_.dst().type(m).dtype)) return m;
    auto [it, fresh] = wide_.try_emplace(v.index);
    if (!fresh) return it->second;
    const int producer = g_.value(v).producer;
    const Node* n = producer >= 0 ? &g_.nodes()[static_cast<size_t>(producer)] : nullptr;
    if (n && n->op == OpKind::Constant && exactly_narrow(n->attrs.get("value").as_number(), g_.type(v).dtype)) {
      Attrs attrs = n->attrs;
      attrs.set("dtype", AttrValue(DType::f32));
      it->second = rw_.emit(OpKind::Constant, {}, std::move(attrs), g_.value_name(v) + "_f32", n->loc);
    } else {
      it->second = convert(m, DType::f32, g_.value_name(v) + "_f32");
    }
    return it->second;
  }

  // Whether `value` is one of `narrow`'s values (so f32 holds the same).
  static bool exactly_narrow(double value, DType narrow) {
    if (std::isnan(value) || std::isinf(value) || value == 0) return true;
    const float f = static_cast<float>(value);
    if (static_cast<double>(f) != value) return false;
    if (narrow == DType::bf16) {
      uint32_t bits = 0;
      std::memcpy(&bits, &f, sizeof bits);
      return (bits & 0xFFFFu) == 0;
    }
    // f16: integers up to 2048 (every f16 is not needed here).
    return std::abs(value) <= 2048 && std::floor(value) == value;
  }

  // `v` in its own dtype: a widened value rounded back once.
  ValueId as_written(ValueId v) {
    if (!widened(v)) return rw_.mapped(v);
    auto [it, fresh] = written_.try_emplace(v.index);
    if (fresh) it->second = convert(rw_.mapped(v), g_.type(v).dtype, g_.value_name(v) + "_" + std::string(dtype_name(g_.type(v).dtype)));
    return it->second;
  }

  ValueId convert(ValueId v, DType to, const std::string& name) {
    const int producer = rw_.dst().value(v).producer;
    const SourceLoc loc = producer >= 0 ? rw_.dst().nodes()[static_cast<size_t>(producer)].loc : SourceLoc{};
    return rw_.emit(OpKind::Cast, {v}, {{"to", AttrValue(to)}}, name, loc);
  }

  const Graph& g_;
  Rewriter rw_;
  std::map<int, ValueId> wide_, written_;  // by source value: its f32 form, its own dtype's
  std::set<int> returned_;                 // the values the graph returns
};

}  // namespace

Graph widen_narrow_floats(const Graph& g) {
  bool any = false;
  for (const Node& n : g.nodes()) {
    const bool narrow = narrow_float(g.type(n.output).dtype);
    any = any || (narrow && (computes(n.op) || (n.op == OpKind::Cast && is_float(g.type(n.inputs[0]).dtype))));
  }
  if (!any) return g;
  return Widener(g).run();
}

}  // namespace stitch
