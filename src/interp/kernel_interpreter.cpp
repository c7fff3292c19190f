// The reference execution of user kernels (docs/kernel-language.md, Reference
// semantics): one index at a time, in row-major order of the range. Every op
// goes through the graph interpreter's own evaluators on one-element buffers,
// so a kernel's `exp` or `/` rounds exactly as the graph op does. It also
// checks what compiled code cannot: every index is inside its array, and no
// two indices of the range touch one element where one of them writes it.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <unordered_map>

#include "interp/kernel_binding.h"
#include "interp/op_evaluators.h"
#include "interp/rounding.h"
#include "interp/scalar_semantics.h"
#include "interp/wide_buffer.h"
#include "stitch/attr.h"

namespace stitch {

namespace interp {

namespace {

std::string param_what(const UserKernel& k, size_t i) {
  return fmt::format("kernel '{}': argument {} ('{}')", k.name, i + 1, k.params[i].name);
}

WideScalar scalar_argument(const UserKernel& k, size_t i, const KernelArg& a) {
  const KernelParam& p = k.params[i];
  WideScalar s;
  s.dtype = p.dtype;
  if (is_float(p.dtype)) {
    double v = a.is_float ? a.float_value : static_cast<double>(a.int_value);
    s.f = round_to_float_dtype(v, p.dtype);
    return s;
  }
  if (a.is_float && (!std::isfinite(a.float_value) || a.float_value != std::trunc(a.float_value) ||
                     std::fabs(a.float_value) >= 9.2233720368547758e18)) {
    throw UserError(fmt::format("{} is {} but {} is not an integer", param_what(k, i), dtype_name(p.dtype),
                                format_float(a.float_value)));
  }
  int64_t v = a.is_float ? static_cast<int64_t>(a.float_value) : a.int_value;
  if (wrap_to_int_dtype(v, p.dtype) != v) {
    throw UserError(fmt::format("{}: value {} does not fit {}", param_what(k, i), v, dtype_name(p.dtype)));
  }
  s.i = v;
  return s;
}

}  // namespace

// ------------------------------------------------------------ evaluation

namespace {

// A name's value; arrays are looked up separately.
using Env = std::unordered_map<std::string, WideScalar>;

struct ArraySlot {
  ArrayView view;
  std::vector<int64_t> strides;
};

// Who touched one element during a parallel_for: the index that wrote it and
// the index that read it (kMany once two did). Kept by the element's address,
// so arguments that share storage (the same tensor twice, overlapping views)
// share it.
struct Touch {
  static constexpr int64_t kNone = -1;
  static constexpr int64_t kMany = -2;
  int64_t writer = kNone;
  int64_t reader = kNone;
};

class Evaluator {
 public:
  Evaluator(const UserKernel& k, Env env) : k_(k), env_(std::move(env)) {}

  void bind_array(const std::string& name, ArrayView v) {
    arrays_[name] = ArraySlot{v, contiguous_strides(std::vector<int64_t>(v.shape, v.shape + v.rank))};
  }

  WideScalar eval(const KExpr& e) {
    const KernelExprNode& n = e.node();
    STITCH_ASSERT(n.typed, "kernel interpreter: untyped expression (kernel not checked)");
    switch (n.kind) {
      case KernelExprKind::Literal: {
        WideScalar s{n.dtype, 0.0, 0};
        if (is_float(n.dtype)) {
          s.f = round_to_float_dtype(n.float_value, n.dtype);
        } else {
          s.i = n.int_value;
        }
        return s;
      }
      case KernelExprKind::Name: {
        auto it = env_.find(n.name);
        STITCH_ASSERT(it != env_.end(), "kernel interpreter: unbound name " + n.name);
        return it->second;
      }
      case KernelExprKind::Load: {
        const std::byte* p = element(n.name, n.operands, n.loc, false);
        WideScalar s{n.dtype, 0.0, 0};
        if (is_float(n.dtype)) {
          s.f = element_get_f64(p, n.dtype);
        } else {
          s.i = element_get_i64(p, n.dtype);
        }
        return s;
      }
      case KernelExprKind::Op: return eval_op(n);
    }
    STITCH_ASSERT(false, "unhandled kernel expression");
  }

  void run_block(const std::vector<KStmt>& body) {
    std::vector<std::string> defined;
    for (const KStmt& s : body) run_stmt(s, defined);
    for (const std::string& name : defined) env_.erase(name);
  }

  void set_index(int64_t id, std::vector<int64_t> index) {
    index_id_ = id;
    index_ = std::move(index);
    for (size_t d = 0; d < index_.size(); ++d) env_[k_.range[d].name] = WideScalar{DType::i64, 0.0, index_[d]};
  }

  void track_races(bool on) { track_ = on; }

  // The reduction's accumulator, in double (floats) or wrapping int64.
  WideScalar accumulator;

 private:
  void run_stmt(const KStmt& s, std::vector<std::string>& defined) {
    switch (s.kind) {
      case KernelStmtKind::Let:
        env_[s.name] = eval(s.value);
        defined.push_back(s.name);
        return;
      case KernelStmtKind::Assign: env_[s.name] = eval(s.value); return;
      case KernelStmtKind::Store: {
        WideScalar v = eval(s.value);
        std::byte* p = element(s.name, s.index, s.loc, true);
        if (is_float(v.dtype)) {
          element_set_f64(p, v.dtype, v.f);
        } else {
          element_set_i64(p, v.dtype, v.i);
        }
        return;
      }
      case KernelStmtKind::If:
        run_block(eval(s.value).i != 0 ? s.body : s.else_body);
        return;
      case KernelStmtKind::For: {
        int64_t extent = eval(s.value).i;
        for (int64_t v = 0; v < extent; ++v) {
          env_[s.name] = WideScalar{DType::i64, 0.0, v};
          run_block(s.body);
        }
        env_.erase(s.name);
        return;
      }
      case KernelStmtKind::Yield: combine(eval(s.value)); return;
    }
  }

  void combine(const WideScalar& v) {
    if (is_float(k_.result_dtype)) {
      double& a = accumulator.f;
      switch (k_.reduction) {
        case KernelReduction::Sum: a += v.f; return;
        case KernelReduction::Max: a = scalar::maximum(a, v.f); return;
        case KernelReduction::Min: a = scalar::minimum(a, v.f); return;
        case KernelReduction::None: break;
      }
    } else {
      int64_t& a = accumulator.i;
      switch (k_.reduction) {
        case KernelReduction::Sum: a = scalar::wrapping_add(a, v.i); return;
        case KernelReduction::Max: a = std::max(a, v.i); return;
        case KernelReduction::Min: a = std::min(a, v.i); return;
        case KernelReduction::None: break;
      }
    }
    STITCH_ASSERT(false, "yield in a kernel without a reduction");
  }

  std::string index_text() const {
    std::string s = "(";
    for (size_t d = 0; d < index_.size(); ++d) s += fmt::format("{}{}={}", d ? ", " : "", k_.range[d].name, index_[d]);
    return s + ")";
  }

  std::string index_of(int64_t id) const {
    std::string s = "(";
    std::vector<int64_t> ix(k_.range.size());
    for (size_t d = k_.range.size(); d-- > 0;) {
      int64_t e = extents_.empty() ? 1 : extents_[d];
      ix[d] = e > 0 ? id % e : 0;
      id = e > 0 ? id / e : 0;
    }
    for (size_t d = 0; d < ix.size(); ++d) s += fmt::format("{}{}={}", d ? ", " : "", k_.range[d].name, ix[d]);
    return s + ")";
  }

 public:
  void set_extents(std::vector<int64_t> e) { extents_ = std::move(e); }

 private:
  // The address of array[index...], checked.
  std::byte* element(const std::string& array, const std::vector<KExpr>& index, const SourceLoc& loc, bool write) {
    ArraySlot& slot = arrays_.at(array);
    const int64_t* shape = slot.view.shape;
    int64_t offset = 0;
    std::string where;
    for (size_t d = 0; d < index.size(); ++d) {
      int64_t i = eval(index[d]).i;
      if (i < 0 || i >= shape[d]) {
        std::string text;
        for (const KExpr& x : index) text += (text.empty() ? "" : ", ") + std::to_string(eval(x).i);
        throw UserError(fmt::format("kernel '{}': index {} {} {}[{}], outside axis {} of extent {}", k_.name,
                                    index_text(), write ? "writes" : "reads", array, text, d, shape[d]),
                        loc);
      }
      offset += i * slot.strides[d];
    }
    std::byte* p = slot.view.data + offset * dtype_size(slot.view.dtype);
    if (track_) note_touch(array, p, offset, write, loc);
    return p;
  }

  void note_touch(const std::string& array, const std::byte* p, int64_t offset, bool write, const SourceLoc& loc) {
    Touch& touch = touches_[p];
    int64_t& writer = touch.writer;
    int64_t& reader = touch.reader;
    auto race = [&](int64_t other, const char* what) {
      std::string others = other == Touch::kMany ? fmt::format("other indices {}", what == std::string("reads it") ? "read it" : what)
                                                   : fmt::format("index {} {}", index_of(other), what);
      throw UserError(fmt::format("kernel '{}': race on {} (element {}): index {} {} it, and {}; the "
                                  "result would depend on the order the indices run in",
                                  k_.name, array, offset, index_text(), write ? "writes" : "reads", others),
                      loc);
    };
    if (writer != Touch::kNone && writer != index_id_) race(writer, "writes it too");
    if (write) {
      if (reader == Touch::kMany || (reader != Touch::kNone && reader != index_id_)) race(reader, "reads it");
      writer = index_id_;
    } else if (reader == Touch::kNone) {
      reader = index_id_;
    } else if (reader != index_id_) {
      reader = Touch::kMany;
    }
  }

  WideScalar eval_op(const KernelExprNode& n) {
    auto [it, fresh] = nodes_.try_emplace(&n);
    Node& node = it->second;
    if (fresh) {
      node.op = n.op;
      if (n.op == OpKind::Cast) node.attrs.set("to", n.cast_to);
    }
    std::vector<WideBuffer> operands;
    operands.reserve(n.operands.size());
    for (const KExpr& o : n.operands) {
      WideScalar v = eval(o);
      WideBuffer b(v.dtype, {});
      if (is_float(v.dtype)) {
        b.floats()[0] = v.f;
      } else {
        b.ints()[0] = v.i;
      }
      operands.push_back(std::move(b));
    }
    static const std::string kName = "kernel expression";
    OpCall call{node, {}, n.dtype, {}, kName, nullptr};
    for (const WideBuffer& b : operands) call.inputs.push_back(&b);
    WideBuffer out;
    if (n.op == OpKind::Cast) {
      out = evaluate_cast(call);
    } else if (n.op == OpKind::Select || n.op == OpKind::Clamp) {
      out = evaluate_select_clamp(call);
    } else if (is_unary_elementwise(n.op)) {
      out = evaluate_unary(call);
    } else {
      out = evaluate_binary(call);
    }
    WideScalar s{n.dtype, 0.0, 0};
    if (is_float(n.dtype)) {
      s.f = out.floats()[0];
    } else {
      s.i = out.ints()[0];
    }
    return s;
  }

  const UserKernel& k_;
  Env env_;
  std::unordered_map<std::string, ArraySlot> arrays_;
  std::unordered_map<const KernelExprNode*, Node> nodes_;
  std::unordered_map<const std::byte*, Touch> touches_;
  std::vector<int64_t> index_;
  std::vector<int64_t> extents_;
  int64_t index_id_ = 0;
  bool track_ = false;
};

Env scalar_env(const UserKernel& k, const KernelBinding& b) {
  Env env;
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (!k.params[i].is_array) env[k.params[i].name] = b.scalars[i];
  }
  for (const auto& [name, extent] : b.symbols) env[name] = WideScalar{DType::i64, 0.0, extent};
  return env;
}

WideScalar reduction_identity(const UserKernel& k) {
  WideScalar s{k.result_dtype, 0.0, 0};
  if (k.reduction == KernelReduction::Sum) return s;
  bool max = k.reduction == KernelReduction::Max;
  if (is_float(k.result_dtype)) {
    s.f = max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  } else {
    int64_t lo = k.result_dtype == DType::i8 ? INT8_MIN : k.result_dtype == DType::i32 ? INT32_MIN : INT64_MIN;
    int64_t hi = k.result_dtype == DType::i8 ? INT8_MAX : k.result_dtype == DType::i32 ? INT32_MAX : INT64_MAX;
    s.i = max ? lo : hi;
  }
  return s;
}

// An extent made of symbols, i64 scalars, literals, sums, differences and
// products, evaluated without the evaluator's tables: recording a lazy call
// binds its range, and must cost well under a microsecond. Anything else
// returns false and goes through the evaluator.
bool simple_extent(const UserKernel& k, const KernelBinding& b, const KExpr& e, int64_t* out) {
  const KernelExprNode& n = e.node();
  switch (n.kind) {
    case KernelExprKind::Literal:
      if (n.dtype != DType::i64) return false;
      *out = n.int_value;
      return true;
    case KernelExprKind::Name: {
      if (auto it = b.symbols.find(n.name); it != b.symbols.end()) {
        *out = it->second;
        return true;
      }
      for (size_t p = 0; p < k.params.size(); ++p) {
        if (k.params[p].name == n.name && !k.params[p].is_array && k.params[p].dtype == DType::i64) {
          *out = b.scalars[p].i;
          return true;
        }
      }
      return false;
    }
    case KernelExprKind::Load: return false;
    case KernelExprKind::Op: break;
  }
  if (n.dtype != DType::i64 || n.operands.size() != 2) return false;
  int64_t x = 0;
  int64_t y = 0;
  if (!simple_extent(k, b, n.operands[0], &x) || !simple_extent(k, b, n.operands[1], &y)) return false;
  switch (n.op) {
    case OpKind::Add: *out = scalar::wrapping_add(x, y); return true;
    case OpKind::Sub: *out = scalar::wrapping_sub(x, y); return true;
    case OpKind::Mul: *out = scalar::wrapping_mul(x, y); return true;
    default: return false;
  }
}

}  // namespace

KernelBinding bind_kernel(const UserKernel& k, const std::vector<KernelArg>& args) {
  if (args.size() != k.params.size()) {
    throw UserError(fmt::format("kernel '{}' takes {} argument{}, got {}", k.name, k.params.size(),
                                k.params.size() == 1 ? "" : "s", args.size()));
  }
  KernelBinding b;
  b.scalars.resize(k.params.size());
  for (size_t i = 0; i < k.params.size(); ++i) {
    const KernelParam& p = k.params[i];
    const KernelArg& a = args[i];
    if (!p.is_array) {
      if (a.is_array) throw UserError(fmt::format("{} is a scalar {}, got an array", param_what(k, i), dtype_name(p.dtype)));
      b.scalars[i] = scalar_argument(k, i, a);
      continue;
    }
    if (!a.is_array) {
      throw UserError(fmt::format("{} is an array {}, got a scalar", param_what(k, i), TensorType{p.dtype, p.shape}.str()));
    }
    const ArrayView& t = a.array;
    if (t.dtype != p.dtype || t.rank != static_cast<int>(p.shape.size())) {
      throw UserError(fmt::format("{} must be {}, got {}{}", param_what(k, i), TensorType{p.dtype, p.shape}.str(),
                                  dtype_name(t.dtype), shape_str(Shape(t.shape, t.shape + t.rank))));
    }
    for (size_t d = 0; d < p.shape.size(); ++d) {
      const Dim& dim = p.shape[d];
      int64_t got = t.shape[d];
      if (dim.is_static()) {
        if (dim.extent() != got) {
          throw UserError(fmt::format("{}: axis {} has extent {}, expected {}", param_what(k, i), d, got, dim.extent()));
        }
        continue;
      }
      auto [it, fresh] = b.symbols.emplace(dim.name(), got);
      if (!fresh && it->second != got) {
        throw UserError(fmt::format("{}: axis {} binds symbol {} to {}, but an earlier argument bound it to {}",
                                    param_what(k, i), d, dim.name(), got, it->second));
      }
    }
  }
  std::unique_ptr<Evaluator> ev;
  b.index_count = 1;
  for (const KernelIndex& ix : k.range) {
    int64_t e = 0;
    if (!simple_extent(k, b, ix.extent, &e)) {
      if (!ev) ev = std::make_unique<Evaluator>(k, scalar_env(k, b));
      e = ev->eval(ix.extent).i;
    }
    if (e < 0) throw UserError(fmt::format("kernel '{}': the range of '{}' has negative extent {}", k.name, ix.name, e));
    b.extents.push_back(e);
    // At most 2^48 indices (docs/limits.md): flattened index arithmetic over
    // the range then cannot overflow, even with the zero extents taken as 1.
    if (!tensor_span_bytes(DType::i8, b.extents)) {
      std::string extents;
      for (size_t d = 0; d < b.extents.size(); ++d) {
        extents += fmt::format("{}{} < {}", d ? ", " : "", k.range[d].name, b.extents[d]);
      }
      throw UserError(fmt::format("kernel '{}': the range {} has more indices than the limit of {} (2^48)", k.name,
                                  extents, kMaxTensorBytes));
    }
    b.index_count *= e;
  }
  return b;
}

}  // namespace interp

Tensor interpret_kernel(const UserKernel& k, const std::vector<KernelArg>& args) {
  using namespace interp;
  KernelBinding b = bind_kernel(k, args);
  Evaluator ev(k, scalar_env(k, b));
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (k.params[i].is_array) ev.bind_array(k.params[i].name, args[i].array);
  }
  ev.set_extents(b.extents);
  ev.track_races(true);
  ev.accumulator = reduction_identity(k);
  std::vector<int64_t> index(k.range.size(), 0);
  for (int64_t id = 0; id < b.index_count; ++id) {
    int64_t rest = id;
    for (size_t d = k.range.size(); d-- > 0;) {
      index[d] = rest % b.extents[d];
      rest /= b.extents[d];
    }
    ev.set_index(id, index);
    ev.run_block(k.body);
  }
  if (!k.is_reduction()) return Tensor();
  Tensor result(k.result_dtype, {});
  if (is_float(k.result_dtype)) {
    result.set_f64(0, round_to_float_dtype(ev.accumulator.f, k.result_dtype));
  } else {
    result.set_i64(0, ev.accumulator.i);
  }
  return result;
}

}  // namespace stitch
