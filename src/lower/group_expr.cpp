// Expression machinery shared by the loop and reduction lowerings
// (docs/lowering.md, Expressions). Layout ops never move data here: they only
// rewrite the index at which their operand is evaluated.
#include "lower/group_expr.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <set>

#include "kir/printer.h"
#include "stitch/error.h"

namespace stitch::lower {

using kir::Expr;

// KIR names are emitted unchanged as C++ identifiers, so graph names are
// reduced to [A-Za-z0-9_].
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

Expr ceil_div_i(const Expr& a, int64_t b) {
  int64_t value = 0;
  if (kir::is_int_constant(a, &value)) return kir::int_const((value + b - 1) / b);
  return (a + (b - 1)) / b;
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

GroupExpr::GroupExpr(const Graph& g, const FusionGroup& group, kir::KernelBuilder& kb)
    : g_(g), kb_(kb), in_group_(group.nodes.begin(), group.nodes.end()), ranges_(g) {}

void GroupExpr::declare_params(const GroupSignature& sig) {
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
  if (sig.status) {
    status_buffer_ = "status";
    kb_.buffer_param(status_buffer_, DType::i32, {kir::int_const(1)}, kir::Access::Write);
  }
}


// C-order multi-index of `lin` in `shape`, one local per dimension. The
// output index is named by dimension (i0 outermost) so printed kernels read
// like the shape; inner re-indexings take fresh names.
Index GroupExpr::delinearize(const Expr& lin, const Shape& shape, const std::string& prefix) {
  int rank = static_cast<int>(shape.size());
  Index idx(rank);
  Expr stride = kir::int_const(1);
  for (int k = rank - 1; k >= 0; --k) {
    int64_t s = 0;
    Expr q = kir::is_int_constant(stride, &s) && s == 1 ? lin : lin / stride;
    Expr v = k == 0 ? q : q % dim_expr(shape[k]);
    if (shape[k].is_static() && shape[k].extent() == 1) v = kir::int_const(0);
    idx[k] = kb_.let(prefix.empty() ? fresh("j") : prefix + std::to_string(k), v);
    stride = mul_i(stride, dim_expr(shape[k]));
  }
  return idx;
}

Expr GroupExpr::linearize(const Index& idx, const Shape& shape) {
  Expr lin = kir::int_const(0);
  for (size_t k = 0; k < shape.size(); ++k) lin = add_i(mul_i(lin, dim_expr(shape[k])), idx[k]);
  return lin;
}

namespace {

std::string index_key(const Index& idx, const Shape& shape) {
  std::string key;
  for (const Expr& e : idx) key += kir::print_expr(e) + ",";
  key += "@";
  for (const Dim& d : shape) key += kir::print_expr(dim_expr(d)) + ",";
  return key;
}

template <typename T>
const T* find_scoped(const std::vector<std::map<std::string, T>>& scopes, const std::string& key) {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto found = it->find(key);
    if (found != it->end()) return &found->second;
  }
  return nullptr;
}

}  // namespace

Index GroupExpr::reshaped(const Index& idx, const Shape& from, const Shape& to) {
  const std::string from_key = index_key(idx, from);
  Expr lin;
  if (const Expr* known = find_scoped(linear_of_, from_key)) {
    lin = *known;
  } else {
    lin = linearize(idx, from);
    if (!kir::is_int_constant(lin)) lin = kb_.let(fresh("r"), lin);
    linear_of_.back()[from_key] = lin;
  }
  const std::string to_key = index_key({lin}, to);
  if (const Index* made = find_scoped(reshaped_, to_key)) return *made;
  Index out = delinearize(lin, to);
  reshaped_.back()[to_key] = out;
  linear_of_.back()[index_key(out, to)] = lin;
  return out;
}

std::vector<int64_t> transpose_permutation(const Node& node, size_t rank) {
  std::vector<int64_t> perm;
  if (const AttrValue* p = node.attrs.find("perm")) perm = p->as_ints();
  for (size_t k = perm.size(); k < rank; ++k) perm.push_back(static_cast<int64_t>(rank - 1 - k));
  return perm;
}

std::string GroupExpr::memo_key(ValueId v, const Index& idx) const {
  std::string key = std::to_string(v.index);
  for (const Expr& e : idx) key += "|" + kir::print_expr(e);
  return key;
}

const Expr* GroupExpr::find_memo(const std::string& key) const { return find_scoped(memo_, key); }

std::optional<Expr> GroupExpr::memoised(ValueId v, const Index& idx) const {
  if (const Expr* e = find_memo(memo_key(v, idx))) return *e;
  return std::nullopt;
}

// Locals defined inside a branch are out of scope after it.
void GroupExpr::scoped(const std::function<void()>& fn) {
  memo_.emplace_back();
  linear_of_.emplace_back();
  reshaped_.emplace_back();
  fn();
  reshaped_.pop_back();
  linear_of_.pop_back();
  memo_.pop_back();
}

Expr GroupExpr::eval(ValueId v, const Index& idx) {
  int producer = g_.value(v).producer;
  if (producer < 0 || !in_group_.count(producer)) {
    if (held_.count(v.index)) {
      if (const Expr* e = find_memo(memo_key(v, idx))) return *e;
    }
    loads_.push_back({v, idx});
    return kb_.load(buffer_of_.at(v.index), idx);
  }
  if (auto it = bound_.find(v.index); it != bound_.end()) return it->second;
  if (auto it = bound_at_.find(v.index); it != bound_at_.end()) return it->second(idx);
  std::string key = memo_key(v, idx);
  if (const Expr* e = find_memo(key)) return *e;
  if (op_info(g_.nodes()[producer].op).category == OpCategory::HeavyElementwise) ++heavy_evaluated_;
  Expr result = eval_node(g_.nodes()[producer], idx);
  memo_.back().emplace(key, result);
  return result;
}

Expr GroupExpr::eval_node(const Node& node, const Index& idx) {
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
      const size_t rank = idx.size();
      const std::vector<int64_t> perm = transpose_permutation(node, rank);
      Index j(rank);
      for (size_t k = 0; k < rank; ++k) j[perm[k]] = idx[k];
      return eval(node.inputs[0], j);
    }
    case OpKind::Reshape:
      return eval(node.inputs[0], reshaped(idx, type.shape, g_.type(node.inputs[0]).shape));
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
    case OpKind::Gather: return eval_gather(node, idx);
    case OpKind::Dot: return eval_dot(node, idx);
    default: break;
  }
  Index operands;
  for (ValueId in : node.inputs) operands.push_back(eval(in, idx));
  Expr e;
  if (node.op == OpKind::Cast) {
    // A float -> int cast that cannot saturate is a plain conversion, which
    // GCC vectorises (the resize composite's source indices).
    const DType to = attrs.get("to").as_dtype();
    e = ranges_.cast_never_saturates(node.inputs[0], to) ? kir::cast_in_range(operands[0], to)
                                                         : kir::cast(operands[0], to);
  } else {
    e = kir::op(node.op, operands);
  }
  return kb_.let(fresh("e"), e);
}

// An if-chain rather than a select: a select would evaluate (and load) every
// operand, out of bounds for all but one.
Expr GroupExpr::eval_concat(const Node& node, const Index& idx) {
  if (auto assumed = eval_assumed_concat(node, idx)) return *assumed;
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

Expr GroupExpr::eval_pad(const Node& node, const Index& idx) {
  if (auto assumed = eval_assumed_pad(node, idx)) return *assumed;
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

// Under a piece assumption (piece_versions.h): the piece it names (or the
// largest) with no branch, when the coordinate along the axis is affine in an
// index variable and the piece can hold a whole block; nullopt otherwise, and
// the if-chain stands.
std::optional<Expr> GroupExpr::eval_assumed_concat(const Node& node, const Index& idx) {
  if (!assume_) return std::nullopt;
  const int64_t axis = node.attrs.get("axis").as_int();
  std::vector<int64_t> offsets{0};
  size_t largest = 0;
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const Dim& d = g_.type(node.inputs[k]).shape[axis];
    if (!d.is_static()) return std::nullopt;
    offsets.push_back(offsets.back() + d.extent());
    if (d.extent() > g_.type(node.inputs[largest]).shape[axis].extent()) largest = k;
  }
  const int node_index = static_cast<int>(&node - g_.nodes().data());
  const size_t piece = node_index == assume_->forced_node ? assume_->forced_piece : largest;
  if (concat_piece_run(g_, node, piece) < assume_->min_piece_elements) return std::nullopt;
  std::optional<AffineCoord> coord = affine_in(idx[axis], assume_->axes);
  if (!coord) return std::nullopt;
  assume_->add_guard({*coord, offsets[piece], offsets[piece + 1]});
  const std::pair<int, size_t> used{node_index, piece};
  if (std::find(assume_->concats.begin(), assume_->concats.end(), used) == assume_->concats.end()) {
    assume_->concats.push_back(used);
  }
  Index j = idx;
  j[axis] = sub_i(idx[axis], kir::int_const(offsets[piece]));
  return eval(node.inputs[piece], j);
}

// The interior with no branch, under the same conditions.
std::optional<Expr> GroupExpr::eval_assumed_pad(const Node& node, const Index& idx) {
  if (!assume_) return std::nullopt;
  const AttrValue::Ints& low = node.attrs.get("low").as_ints();
  const Shape& in = g_.type(node.inputs[0]).shape;
  const Shape& out = g_.type(node.output).shape;
  // The longest run of consecutive elements inside: the unpadded trailing
  // dims and the innermost padded one.
  int64_t run = 1;
  for (size_t k = idx.size(); k-- > 0;) {
    if (!in[k].is_static()) return std::nullopt;
    run *= in[k].extent();
    if (low[k] != 0 || out[k] != in[k]) break;
  }
  if (run < assume_->min_piece_elements) return std::nullopt;
  std::vector<PieceGuard> guards;
  for (size_t k = 0; k < idx.size(); ++k) {
    std::optional<AffineCoord> coord = affine_in(idx[k], assume_->axes);
    if (!coord || !in[k].is_static()) return std::nullopt;
    guards.push_back({*coord, low[k], low[k] + in[k].extent()});
  }
  for (const PieceGuard& guard : guards) assume_->add_guard(guard);
  Index j;
  for (size_t k = 0; k < idx.size(); ++k) j.push_back(sub_i(idx[k], kir::int_const(low[k])));
  return eval(node.inputs[0], j);
}

// numpy `take`: the output index splits into x's leading dims, the index
// operand's dims and x's trailing dims; the loaded (or computed) index picks
// the position along `axis`, negatives counting from the end. In-range
// indices give exactly the interpreter's element. An out-of-range index is a
// user error there; a kernel cannot raise one, so it is clamped into the axis
// to keep the load in bounds (docs/lowering.md, Gather).
Expr GroupExpr::eval_gather(const Node& node, const Index& idx) {
  const int64_t axis = node.attrs.get("axis").as_int();
  const Shape& x_shape = g_.type(node.inputs[0]).shape;
  const size_t index_rank = g_.type(node.inputs[1]).shape.size();
  Index at(idx.begin() + axis, idx.begin() + axis + static_cast<int64_t>(index_rank));
  Expr loaded = eval(node.inputs[1], at);
  Expr raw = kb_.let(fresh("k"), loaded.dtype() == DType::i64 ? loaded : kir::cast(loaded, DType::i64));
  Expr n = dim_expr(x_shape[axis]);
  Index j(idx.begin(), idx.begin() + axis);
  j.insert(j.end(), idx.begin() + axis + static_cast<int64_t>(index_rank), idx.end());
  const auto j_at = j.begin() + axis;
  if (x_shape[axis].is_static() && known_in_range(node.inputs[1], x_shape[axis].extent())) {
    // Nothing to check, wrap or clamp.
    j.insert(j_at, raw);
    return eval(node.inputs[0], j);
  }
  // The interpreter rejects an index outside [-n, n) (docs/semantics.md,
  // gather); the kernel reports it through the status buffer, and the
  // executable turns that into the same UserError after the launch.
  if (status_buffer_.empty()) {
    throw InternalError("lowering a gather without a status buffer in the signature", __FILE__, __LINE__);
  }
  const int64_t node_index = &node - g_.nodes().data();
  kb_.if_then(kir::op(OpKind::Or, {kir::op(OpKind::Lt, {raw, kir::op(OpKind::Neg, {n})}),
                                   kir::op(OpKind::Ge, {raw, n})}),
              [&] { kb_.store(status_buffer_, {kir::int_const(0)}, literal(static_cast<double>(node_index + 1), DType::i32)); });
  Expr wrapped = kir::op(OpKind::Select, {kir::op(OpKind::Lt, {raw, kir::int_const(0)}), add_i(raw, n), raw});
  Expr clamped = kir::op(OpKind::Max, {kir::op(OpKind::Min, {wrapped, sub_i(n, kir::int_const(1))}),
                                       kir::int_const(0)});
  Expr position = kb_.let(fresh("g"), clamped);
  j.insert(j_at, position);
  DType dtype = g_.type(node.output).dtype;
  int64_t extent = 0;
  if (kir::is_int_constant(n, &extent)) {
    // An empty axis with a non-empty index is always out of range: no load.
    return extent > 0 ? eval(node.inputs[0], j) : literal(0.0, dtype);
  }
  Expr result = kb_.let(fresh("t"), literal(0.0, dtype));
  kb_.if_then(kir::op(OpKind::Gt, {n, kir::int_const(0)}),
              [&] { scoped([&] { kb_.assign(result, eval(node.inputs[0], j)); }); });
  return result;
}

bool GroupExpr::known_in_range(ValueId v, int64_t extent) {
  const std::optional<Interval> r = ranges_.of(v);
  return r && r->lo >= 0 && r->hi <= static_cast<double>(extent - 1);
}

// One element of numpy matmul (docs/semantics.md, dot), as the interpreter
// computes it: products in double (exact for f32 operands), added in
// increasing k from +0 and rounded once; integers in i64, wrapping. The
// stitch planner fuses only dots with a short static contraction into loop
// kernels (docs/lowering.md, Small dots), so the serial loop is short.
Expr GroupExpr::eval_dot(const Node& node, const Index& idx) {
  const Shape& a_shape = g_.type(node.inputs[0]).shape;
  const Shape& b_shape = g_.type(node.inputs[1]).shape;
  const DType dtype = g_.type(node.output).dtype;
  const bool a_vector = a_shape.size() == 1;
  const bool b_vector = b_shape.size() == 1;
  const size_t matrix_dims = (a_vector ? 0 : 1) + (b_vector ? 0 : 1);
  const size_t batch = idx.size() - matrix_dims;
  // Batch dims right-aligned against the output's; an extent-1 dim broadcasts.
  auto batch_index = [&](const Shape& shape, size_t own_batch) {
    Index j;
    for (size_t d = 0; d < own_batch; ++d) {
      const bool repeated = shape[d].is_static() && shape[d].extent() == 1;
      j.push_back(repeated ? kir::int_const(0) : idx[batch - own_batch + d]);
    }
    return j;
  };
  const DType acc_dtype = is_float(dtype) ? DType::f64 : DType::i64;
  Expr acc = kb_.let(fresh("acc"), literal(0.0, acc_dtype));
  kb_.serial(fresh("k"), dim_expr(a_shape.back()), [&](const Expr& k) {
    scoped([&] {
      Index a_idx = batch_index(a_shape, a_shape.size() - (a_vector ? 1 : 2));
      if (!a_vector) a_idx.push_back(idx[batch]);
      a_idx.push_back(k);
      Index b_idx = batch_index(b_shape, b_shape.size() - (b_vector ? 1 : 2));
      b_idx.push_back(k);
      if (!b_vector) b_idx.push_back(idx.back());
      Expr product = kir::op(OpKind::Mul, {kir::cast(eval(node.inputs[0], a_idx), acc_dtype),
                                           kir::cast(eval(node.inputs[1], b_idx), acc_dtype)});
      kb_.assign(acc, kir::op(OpKind::Add, {acc, product}));
    });
  });
  return kb_.let(fresh("e"), kir::cast(acc, dtype));
}

}  // namespace stitch::lower
