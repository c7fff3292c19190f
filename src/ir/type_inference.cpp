#include "ir/type_inference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>

#include "ir/composites_nn.h"

namespace stitch {

namespace {

enum class AttrKind { Int, Number, Bool, DType, String, Ints, ShapeList };

struct AttrSpec {
  const char* name;
  AttrKind kind;
  bool required;
};

std::vector<AttrSpec> attr_schema(OpKind k) {
  using K = AttrKind;
  switch (k) {
    case OpKind::Cast: return {{"to", K::DType, true}};
    case OpKind::Broadcast: return {{"shape", K::ShapeList, true}};
    case OpKind::Reshape: return {{"shape", K::ShapeList, true}};
    case OpKind::Transpose: return {{"perm", K::Ints, false}};
    case OpKind::Slice:
      return {{"start", K::Ints, false}, {"stop", K::ShapeList, false}, {"step", K::Ints, false}};
    case OpKind::Concat: return {{"axis", K::Int, true}};
    case OpKind::Pad: return {{"low", K::Ints, true}, {"high", K::Ints, true}, {"value", K::Number, false}};
    case OpKind::Gather: return {{"axis", K::Int, false}};
    case OpKind::Iota: return {{"shape", K::ShapeList, true}, {"axis", K::Int, true}, {"dtype", K::DType, false}};
    case OpKind::Constant:
      return {{"value", K::Number, true}, {"shape", K::ShapeList, false}, {"dtype", K::DType, false}};
    case OpKind::ArgMax:
    case OpKind::ArgMin: return {{"axes", K::Ints, true}, {"keepdims", K::Bool, false}};
    case OpKind::Attention: return {{"scale", K::Number, false}, {"causal", K::Bool, false}};
    case OpKind::Conv:
      return {{"strides", K::Ints, false}, {"pads", K::Ints, false}, {"dilations", K::Ints, false},
              {"groups", K::Int, false}, {"channels_last", K::Bool, false}, {"side_input", K::Bool, false},
              {"activation_min", K::Number, false}, {"activation_max", K::Number, false}};
    default:
      if (is_reduction(k)) return {{"axes", K::Ints, false}, {"keepdims", K::Bool, false}};
      return {};
  }
}

std::string_view kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::Int: return "an integer";
    case AttrKind::Number: return "a number";
    case AttrKind::Bool: return "true or false";
    case AttrKind::DType: return "a dtype";
    case AttrKind::String: return "a string";
    case AttrKind::Ints: return "a list of integers";
    case AttrKind::ShapeList: return "a list of dims";
  }
  return "?";
}

// Checks names and kinds; converts list spellings to the schema's kind.
void check_schema(OpKind k, Attrs& attrs) {
  std::string_view op = op_name(k);
  std::vector<AttrSpec> schema = attr_schema(k);
  for (const auto& item : attrs.items()) {
    // Not a structured binding: clang 14 (the fuzzer's compiler) cannot capture one in a lambda.
    const std::string& name = item.first;
    auto it = std::find_if(schema.begin(), schema.end(), [&](const AttrSpec& s) { return name == s.name; });
    if (it == schema.end()) {
      std::string allowed;
      for (const AttrSpec& s : schema) allowed += (allowed.empty() ? "" : ", ") + std::string(s.name);
      throw UserError(allowed.empty()
                          ? fmt::format("{} takes no attributes, got '{}'", op, name)
                          : fmt::format("unknown attribute '{}' for {} (expected {})", name, op, allowed));
    }
  }
  for (const AttrSpec& s : schema) {
    const AttrValue* v = attrs.find(s.name);
    if (!v) {
      if (s.required) throw UserError(fmt::format("{} requires attribute '{}'", op, s.name));
      continue;
    }
    bool ok = false;
    switch (s.kind) {
      case AttrKind::Int: ok = v->is_int(); break;
      case AttrKind::Number: ok = v->is_number() || v->is_bool(); break;
      case AttrKind::Bool: ok = v->is_bool(); break;
      case AttrKind::DType: ok = v->is_dtype(); break;
      case AttrKind::String: ok = v->is_string(); break;
      case AttrKind::Ints: ok = v->is_ints(); break;
      case AttrKind::ShapeList:
        ok = v->is_shape() || v->is_ints();
        if (v->is_ints()) {
          Shape shape;
          for (int64_t d : v->as_ints()) shape.push_back(Dim(d));
          attrs.set(s.name, AttrValue(std::move(shape)));
        }
        break;
    }
    if (!ok) {
      throw UserError(fmt::format("attribute '{}' of {} must be {}, got {}", s.name, op, kind_name(s.kind),
                                  v->str()));
    }
  }
}

bool dims_equal(const Dim& a, const Dim& b) { return a == b; }

std::string dtypes_str(const std::vector<TensorType>& in) {
  std::string s;
  for (const TensorType& t : in) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t.dtype));
  return s;
}

void require_same_dtype(OpKind k, const std::vector<TensorType>& in, size_t first) {
  for (size_t i = first + 1; i < in.size(); ++i) {
    if (in[i].dtype != in[first].dtype) {
      throw UserError(fmt::format("{} needs operands of one dtype, got {} (insert a cast)", op_name(k),
                                  dtypes_str(in)));
    }
  }
}

void require(bool ok, OpKind k, DType t, std::string_view what) {
  if (!ok) throw UserError(fmt::format("{} expects {} operands, got {}", op_name(k), what, dtype_name(t)));
}

std::vector<int64_t> normalize_axes(OpKind k, const AttrValue::Ints& axes, int rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) out.push_back(normalize_axis(a, rank, op_name(k)));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw UserError(fmt::format("{}: axis {} is listed twice", op_name(k),
                                *std::adjacent_find(out.begin(), out.end())));
  }
  return out;
}

void check_dims(OpKind k, const Shape& shape, std::string_view attr) {
  for (const Dim& d : shape) {
    if (d.is_static() && d.extent() < 0) {
      throw UserError(fmt::format("{}: attribute '{}' has negative extent {}", op_name(k), attr, d.extent()));
    }
  }
}

// Checks that `value` is representable in `dtype` and returns it in normal form.
AttrValue normalize_scalar(OpKind k, const AttrValue& value, DType dtype) {
  if (is_float(dtype)) return AttrValue(value.is_bool() ? (value.as_bool() ? 1.0 : 0.0) : value.as_number());
  double x = value.is_bool() ? (value.as_bool() ? 1 : 0) : value.as_number();
  if (is_bool(dtype)) {
    if (x != 0 && x != 1) throw UserError(fmt::format("{}: value {} is not a bool", op_name(k), value.str()));
    return AttrValue(x != 0);
  }
  if (value.is_float() && (!std::isfinite(x) || x != std::trunc(x))) {
    throw UserError(fmt::format("{}: value {} is not an integer, as {} needs", op_name(k), value.str(),
                                dtype_name(dtype)));
  }
  // Range-check a float before converting it: an out-of-range conversion is undefined behaviour.
  if (value.is_float() && (x < -9.2233720368547758e18 || x >= 9.2233720368547758e18)) {
    throw UserError(fmt::format("{}: value {} does not fit {}", op_name(k), value.str(), dtype_name(dtype)));
  }
  int64_t i = value.is_int() ? value.as_int() : static_cast<int64_t>(x);
  int64_t lo = dtype == DType::i8 ? -128 : dtype == DType::i32 ? std::numeric_limits<int32_t>::min()
                                                               : std::numeric_limits<int64_t>::min();
  int64_t hi = dtype == DType::i8 ? 127 : dtype == DType::i32 ? std::numeric_limits<int32_t>::max()
                                                              : std::numeric_limits<int64_t>::max();
  if (i < lo || i > hi) {
    throw UserError(fmt::format("{}: value {} does not fit {}", op_name(k), value.str(), dtype_name(dtype)));
  }
  return AttrValue(i);
}

// Static product and sorted symbols of a shape, to compare element counts.
struct SymbolicCount {
  int64_t product = 1;
  std::vector<std::string> symbols;
  bool operator==(const SymbolicCount& o) const { return product == o.product && symbols == o.symbols; }
};

SymbolicCount count_of(const Shape& s) {
  SymbolicCount c;
  for (const Dim& d : s) {
    if (d.is_symbolic()) {
      c.symbols.push_back(d.name());
    } else {
      if (d.extent() != 0 && c.product > std::numeric_limits<int64_t>::max() / d.extent()) {
        throw UserError("shape " + shape_str(s) + " has more than 2^63 elements");
      }
      c.product *= d.extent();
    }
  }
  std::sort(c.symbols.begin(), c.symbols.end());
  return c;
}

TensorType infer_reshape(const TensorType& x, Attrs& attrs) {
  Shape target = attrs.get("shape").as_shape();
  int infer_at = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i].is_static() && target[i].extent() == -1) {
      if (infer_at >= 0) throw UserError("reshape: at most one dim may be -1");
      infer_at = static_cast<int>(i);
    } else if (target[i].is_static() && target[i].extent() < 0) {
      throw UserError(fmt::format("reshape: invalid extent {}", target[i].extent()));
    }
  }
  SymbolicCount from = count_of(x.shape);
  if (infer_at >= 0) {
    Shape known = target;
    known.erase(known.begin() + infer_at);
    SymbolicCount rest = count_of(known);
    if (rest.symbols != from.symbols || rest.product == 0 || from.product % rest.product != 0) {
      throw UserError(fmt::format("reshape: cannot infer the -1 in {} from {}", shape_str(target),
                                  shape_str(x.shape)));
    }
    target[infer_at] = Dim(from.product / rest.product);
  }
  if (!(count_of(target) == from)) {
    throw UserError(fmt::format("reshape: {} and {} have different element counts", shape_str(x.shape),
                                shape_str(target)));
  }
  attrs.set("shape", AttrValue(target));
  return {x.dtype, target};
}

TensorType infer_slice(const TensorType& x, Attrs& attrs) {
  int rank = x.rank();
  auto list_or = [&](const char* name, int64_t fill) {
    const AttrValue* v = attrs.find(name);
    if (!v) return AttrValue::Ints(rank, fill);
    if (static_cast<int>(v->as_ints().size()) != rank) {
      throw UserError(fmt::format("slice: '{}' has {} entries, the operand has rank {}", name,
                                  v->as_ints().size(), rank));
    }
    return v->as_ints();
  };
  AttrValue::Ints start = list_or("start", 0);
  AttrValue::Ints step = list_or("step", 1);
  Shape stop = x.shape;
  if (const AttrValue* v = attrs.find("stop")) {
    stop = v->as_shape();
    if (static_cast<int>(stop.size()) != rank) {
      throw UserError(fmt::format("slice: 'stop' has {} entries, the operand has rank {}", stop.size(), rank));
    }
  }
  Shape out;
  for (int i = 0; i < rank; ++i) {
    if (step[i] <= 0) throw UserError(fmt::format("slice: step {} on axis {} must be positive", step[i], i));
    const Dim& d = x.shape[i];
    if (d.is_symbolic()) {
      bool whole = start[i] == 0 && step[i] == 1 &&
                   (stop[i] == d || (stop[i].is_static() && stop[i].extent() == std::numeric_limits<int64_t>::max()));
      if (!whole) {
        throw UserError(fmt::format("slice: axis {} has symbolic extent {}; it can only be taken whole", i, d.name()));
      }
      stop[i] = d;
      out.push_back(d);
      continue;
    }
    int64_t n = d.extent();
    if (stop[i].is_symbolic()) {
      // A prefix of the symbol's length (a mask or a table cut to the sequence
      // length): binding checks that the symbol does not pass the axis.
      if (std::min(start[i] < 0 ? std::max<int64_t>(start[i] + n, 0) : start[i], n) != 0 || step[i] != 1) {
        throw UserError(fmt::format("slice: stop {} on static axis {} needs start 0 and step 1 (a prefix)",
                                    stop[i].name(), i));
      }
      start[i] = 0;
      out.push_back(stop[i]);
      continue;
    }
    // Python slice semantics: negative bounds count from the end, then clamp.
    auto clamp_bound = [n](int64_t b) {
      if (b < 0) b = std::max<int64_t>(b + n, 0);
      return std::min(b, n);
    };
    int64_t s = clamp_bound(start[i]);
    int64_t e = std::max(clamp_bound(stop[i].extent()), s);
    start[i] = s;
    stop[i] = Dim(e);
    // ceil((e - s) / step) without forming e - s + step - 1, which overflows for huge steps.
    out.push_back(Dim((e - s) / step[i] + ((e - s) % step[i] != 0)));
  }
  attrs.set("start", AttrValue(start));
  attrs.set("stop", AttrValue(stop));
  attrs.set("step", AttrValue(step));
  return {x.dtype, out};
}

TensorType infer_dot(const TensorType& a, const TensorType& b) {
  if (a.rank() == 0 || b.rank() == 0) throw UserError("dot: operands must have rank >= 1");
  if (a.dtype != b.dtype) {
    throw UserError(fmt::format("dot needs operands of one dtype, got {}, {} (insert a cast)",
                                dtype_name(a.dtype), dtype_name(b.dtype)));
  }
  require(!is_bool(a.dtype), OpKind::Dot, a.dtype, "numeric");
  Shape sa = a.shape, sb = b.shape;
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), Dim(1));
  if (b_vec) sb.push_back(Dim(1));
  const Dim& ka = sa.back();
  const Dim& kb = sb[sb.size() - 2];
  if (ka != kb) {
    throw UserError(fmt::format("dot: contracted dims differ: {} x {}", shape_str(a.shape), shape_str(b.shape)));
  }
  Shape batch = broadcast_shapes(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
  Shape out = batch;
  if (!a_vec) out.push_back(sa[sa.size() - 2]);
  if (!b_vec) out.push_back(sb.back());
  return {a.dtype, out};
}

// conv(x, w[, bias][, side]) (docs/graph-ir.md, Convolution): x [N, C,
// spatial...] ([N, spatial..., C] with channels_last, and so the result), w
// [O, C / groups, kernel...] static, bias [O], the side input (side_input)
// of the result's shape; one float dtype. The attributes are normalised to
// their full lists (strides and dilations one per spatial axis, pads two,
// groups, channels_last, side_input, activation_min and _max, +-inf for none).
TensorType infer_conv(const std::vector<TensorType>& in, Attrs& attrs) {
  require_same_dtype(OpKind::Conv, in, 0);
  require(is_float(in[0].dtype), OpKind::Conv, in[0].dtype, "floating-point");
  const AttrValue* last = attrs.find("channels_last");
  const bool channels_last = last && last->as_bool();
  Shape x = in[0].shape;
  if (channels_last && x.size() >= 3) {
    // As [N, C, spatial...] for the windows.
    x.insert(x.begin() + 1, x.back());
    x.pop_back();
  }
  const std::vector<Window> w = conv_windows(x, in[1].shape, attrs);
  const Dim out_channels = in[1].shape[0];
  const ConvOperands operands = conv_operands(in.size(), attrs);
  if (in.size() == 4 && !operands.side) throw UserError("conv: a fourth operand is the side input; set side_input=true");
  if (operands.side && in.size() < 3) throw UserError("conv: side_input=true needs a side input operand");
  if (operands.bias && in[operands.bias_index()].shape != Shape{out_channels}) {
    throw UserError(fmt::format("conv: the bias {} is not [{}]", shape_str(in[operands.bias_index()].shape),
                                out_channels.str()));
  }
  std::vector<int64_t> strides, dilations, pads(2 * w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    strides.push_back(w[i].stride);
    dilations.push_back(w[i].dilation);
    pads[i] = w[i].pad_begin;
    pads[w.size() + i] = w[i].pad_end;
  }
  const AttrValue* g = attrs.find("groups");
  const int64_t groups = g ? g->as_int() : 1;
  attrs.set("strides", AttrValue(strides));
  attrs.set("dilations", AttrValue(dilations));
  attrs.set("pads", AttrValue(pads));
  attrs.set("groups", AttrValue(groups));
  attrs.set("channels_last", AttrValue(channels_last));
  attrs.set("side_input", AttrValue(operands.side));
  const double inf = std::numeric_limits<double>::infinity();
  for (const char* bound : {"activation_min", "activation_max"}) {
    const AttrValue* v = attrs.find(bound);
    const double value = v ? v->as_number() : std::string_view(bound) == "activation_min" ? -inf : inf;
    if (std::isnan(value)) throw UserError(fmt::format("conv: {} is NaN", bound));
    attrs.set(bound, AttrValue(value));
  }
  if (attrs.get("activation_min").as_number() > attrs.get("activation_max").as_number()) {
    throw UserError("conv: activation_min is above activation_max");
  }
  Shape out = window_result_shape(x, out_channels, w);
  if (channels_last) {
    out.push_back(out[1]);
    out.erase(out.begin() + 1);
  }
  if (operands.side && in[operands.side_index()].shape != out) {
    throw UserError(fmt::format("conv: the side input {} is not the result's shape {}",
                                shape_str(in[operands.side_index()].shape), shape_str(out)));
  }
  return {in[0].dtype, out};
}

// attention(q, k, v[, bias]) (docs/graph-ir.md, Attention): q [..., Tq, D],
// k [..., Tk, D], v [..., Tk, Dv] with the same leading dims, bias
// broadcastable to [..., Tq, Tk]; the result is [..., Tq, Dv].
TensorType infer_attention(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType &q = in[0], &k = in[1], &v = in[2];
  require_same_dtype(OpKind::Attention, in, 0);
  require(is_float(q.dtype), OpKind::Attention, q.dtype, "floating-point");
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank()) {
    throw UserError(fmt::format("attention: q, k and v need one rank of at least 2, got {}, {}, {}", shape_str(q.shape),
                                shape_str(k.shape), shape_str(v.shape)));
  }
  const size_t r = q.shape.size();
  const Shape lead(q.shape.begin(), q.shape.end() - 2);
  const bool same_lead = Shape(k.shape.begin(), k.shape.end() - 2) == lead && Shape(v.shape.begin(), v.shape.end() - 2) == lead;
  if (!same_lead || q.shape[r - 1] != k.shape[r - 1] || k.shape[r - 2] != v.shape[r - 2]) {
    throw UserError(fmt::format("attention: q {}, k {}, v {} are not [..., Tq, D], [..., Tk, D], [..., Tk, Dv]",
                                shape_str(q.shape), shape_str(k.shape), shape_str(v.shape)));
  }
  Shape scores = lead;
  scores.push_back(q.shape[r - 2]);
  scores.push_back(k.shape[r - 2]);
  if (in.size() == 4) {
    Shape got;
    try {
      got = broadcast_shapes(in[3].shape, scores);
    } catch (const UserError&) {
      got.clear();
    }
    if (got != scores) {
      throw UserError(fmt::format("attention: the bias {} does not broadcast to the scores {}", shape_str(in[3].shape),
                                  shape_str(scores)));
    }
  }
  double scale = 0;
  if (const AttrValue* s = attrs.find("scale")) {
    scale = s->as_number();
  } else {
    const Dim& d = q.shape[r - 1];
    if (!d.is_static()) throw UserError("attention: 'scale' is required when D is symbolic");
    scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(d.extent(), 1)));
  }
  attrs.set("scale", AttrValue(scale));
  const AttrValue* causal = attrs.find("causal");
  attrs.set("causal", AttrValue(causal ? causal->as_bool() : false));
  Shape out = lead;
  out.push_back(q.shape[r - 2]);
  out.push_back(v.shape[r - 1]);
  return {q.dtype, out};
}

TensorType infer_concat(const std::vector<TensorType>& in, Attrs& attrs) {
  const TensorType& first = in[0];
  if (first.rank() == 0) throw UserError("concat: operands must have rank >= 1");
  require_same_dtype(OpKind::Concat, in, 0);
  int64_t axis = normalize_axis(attrs.get("axis").as_int(), first.rank(), "concat");
  attrs.set("axis", AttrValue(axis));
  Shape out = first.shape;
  int64_t total = 0;
  bool symbolic = false;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].rank() != first.rank()) {
      throw UserError(fmt::format("concat: operand {} has rank {}, operand 0 has rank {}", i, in[i].rank(),
                                  first.rank()));
    }
    for (int d = 0; d < first.rank(); ++d) {
      if (d != axis && in[i].shape[d] != first.shape[d]) {
        throw UserError(fmt::format("concat: operand {} has shape {}, incompatible with {} off axis {}", i,
                                    shape_str(in[i].shape), shape_str(first.shape), axis));
      }
    }
    const Dim& d = in[i].shape[axis];
    if (d.is_symbolic()) {
      symbolic = true;
    } else {
      if (d.extent() > std::numeric_limits<int64_t>::max() - total) {
        throw UserError(fmt::format("concat: axis {} of the result would exceed 2^63 - 1 elements", axis));
      }
      total += d.extent();
    }
  }
  if (symbolic && in.size() > 1) {
    throw UserError(fmt::format("concat: axis {} has a symbolic extent; only static extents can be joined", axis));
  }
  if (!symbolic) out[axis] = Dim(total);
  return {first.dtype, out};
}

TensorType infer_reduction(OpKind k, const TensorType& x, Attrs& attrs) {
  if (k == OpKind::ReduceAny || k == OpKind::ReduceAll) {
    require(is_bool(x.dtype), k, x.dtype, "bool");
  } else if (k == OpKind::ReduceMean) {
    require(is_float(x.dtype), k, x.dtype, "floating");
  } else {
    require(!is_bool(x.dtype), k, x.dtype, "numeric");
  }
  AttrValue::Ints axes;
  if (const AttrValue* v = attrs.find("axes")) {
    axes = normalize_axes(k, v->as_ints(), x.rank());
  } else {
    axes.resize(x.rank());
    std::iota(axes.begin(), axes.end(), 0);
  }
  bool is_arg = k == OpKind::ArgMax || k == OpKind::ArgMin;
  if (is_arg && axes.size() != 1) throw UserError(fmt::format("{} takes exactly one axis in 'axes'", op_name(k)));
  bool keepdims = attrs.find("keepdims") ? attrs.get("keepdims").as_bool() : false;
  attrs.set("axes", AttrValue(axes));
  attrs.set("keepdims", AttrValue(keepdims));
  Shape out;
  for (int d = 0; d < x.rank(); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced) {
      out.push_back(x.shape[d]);
    } else if (keepdims) {
      out.push_back(Dim(1));
    }
  }
  return {is_arg ? DType::i64 : x.dtype, out};
}

TensorType infer_elementwise(OpKind k, const std::vector<TensorType>& in) {
  DType t = in[0].dtype;
  if (k == OpKind::Select) {
    require(is_bool(t), k, t, "a bool condition and value");
    require_same_dtype(k, in, 1);
    Shape s = broadcast_shapes(broadcast_shapes(in[0].shape, in[1].shape), in[2].shape);
    return {in[1].dtype, s};
  }
  require_same_dtype(k, in, 0);
  Shape s = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) s = broadcast_shapes(s, in[i].shape);
  switch (k) {
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Sign:
    case OpKind::Relu:
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Rem:
    case OpKind::Pow:
    case OpKind::Max:
    case OpKind::Min:
    case OpKind::Clamp:
      require(!is_bool(t), k, t, "numeric");
      return {t, s};
    case OpKind::Not:
    case OpKind::And:
    case OpKind::Or:
    case OpKind::Xor:
      require(!is_float(t), k, t, "bool or integer");
      return {t, s};
    case OpKind::IsNan:
    case OpKind::IsInf:
      require(!is_bool(t), k, t, "numeric");
      return {DType::boolean, s};
    case OpKind::Eq:
    case OpKind::Ne:
    case OpKind::Lt:
    case OpKind::Le:
    case OpKind::Gt:
    case OpKind::Ge:
      return {DType::boolean, s};
    default:
      // The remaining unary ops and atan2 are transcendental: floats only.
      STITCH_ASSERT(is_unary_elementwise(k) || k == OpKind::Atan2, "unhandled elementwise op");
      require(is_float(t), k, t, "floating");
      return {t, s};
  }
}

}  // namespace

int64_t normalize_axis(int64_t axis, int rank, std::string_view op) {
  if (axis < -rank || axis >= rank) {
    throw UserError(fmt::format("{}: axis {} is out of range for rank {}", op, axis, rank));
  }
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    const Dim* da = i < a.size() ? &a[a.size() - 1 - i] : nullptr;
    const Dim* db = i < b.size() ? &b[b.size() - 1 - i] : nullptr;
    Dim r;
    if (!da) {
      r = *db;
    } else if (!db) {
      r = *da;
    } else if (dims_equal(*da, *db)) {
      r = *da;
    } else if (da->is_static() && da->extent() == 1) {
      r = *db;
    } else if (db->is_static() && db->extent() == 1) {
      r = *da;
    } else {
      throw UserError(fmt::format("shapes {} and {} do not broadcast", shape_str(a), shape_str(b)));
    }
    out[n - 1 - i] = r;
  }
  return out;
}

TensorType infer_type(OpKind k, const std::vector<TensorType>& in, Attrs& attrs) {
  const OpInfo& info = op_info(k);
  int n = static_cast<int>(in.size());
  if (n < info.min_inputs || (info.max_inputs >= 0 && n > info.max_inputs)) {
    std::string expected = info.max_inputs < 0 ? fmt::format("at least {}", info.min_inputs)
                           : info.min_inputs == info.max_inputs ? std::to_string(info.min_inputs)
                           : fmt::format("{} to {}", info.min_inputs, info.max_inputs);
    throw UserError(fmt::format("{} takes {} operand{}, got {}", info.name, expected,
                                expected == "1" ? "" : "s", n));
  }
  check_schema(k, attrs);
  if (is_elementwise(k) && k != OpKind::Cast) return infer_elementwise(k, in);
  if (is_reduction(k)) return infer_reduction(k, in[0], attrs);
  switch (k) {
    case OpKind::Cast: return {attrs.get("to").as_dtype(), in[0].shape};
    case OpKind::Broadcast: {
      const Shape& target = attrs.get("shape").as_shape();
      check_dims(k, target, "shape");
      Shape got;
      try {
        got = broadcast_shapes(in[0].shape, target);
      } catch (const UserError&) {
        got.clear();
      }
      if (got != target) {
        throw UserError(fmt::format("broadcast: {} cannot be broadcast to {}", shape_str(in[0].shape),
                                    shape_str(target)));
      }
      return {in[0].dtype, target};
    }
    case OpKind::Reshape: return infer_reshape(in[0], attrs);
    case OpKind::Transpose: {
      int rank = in[0].rank();
      AttrValue::Ints perm;
      if (const AttrValue* v = attrs.find("perm")) {
        perm = v->as_ints();
      } else {
        for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
      }
      AttrValue::Ints sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      bool is_perm = static_cast<int>(perm.size()) == rank;
      for (int i = 0; is_perm && i < rank; ++i) is_perm = sorted[i] == i;
      if (!is_perm) {
        throw UserError(fmt::format("transpose: perm {} is not a permutation of 0..{}", AttrValue(perm).str(),
                                    rank - 1));
      }
      attrs.set("perm", AttrValue(perm));
      Shape out;
      for (int64_t p : perm) out.push_back(in[0].shape[p]);
      return {in[0].dtype, out};
    }
    case OpKind::Slice: return infer_slice(in[0], attrs);
    case OpKind::Concat: return infer_concat(in, attrs);
    case OpKind::Pad: {
      const TensorType& x = in[0];
      const auto& low = attrs.get("low").as_ints();
      const auto& high = attrs.get("high").as_ints();
      if (static_cast<int>(low.size()) != x.rank() || static_cast<int>(high.size()) != x.rank()) {
        throw UserError(fmt::format("pad: 'low' and 'high' need {} entries each (the operand's rank)", x.rank()));
      }
      Shape out;
      for (int d = 0; d < x.rank(); ++d) {
        if (low[d] < 0 || high[d] < 0) throw UserError(fmt::format("pad: negative padding on axis {}", d));
        if (x.shape[d].is_symbolic()) {
          if (low[d] || high[d]) throw UserError(fmt::format("pad: axis {} has symbolic extent {}", d, x.shape[d].name()));
          out.push_back(x.shape[d]);
        } else {
          int64_t room = std::numeric_limits<int64_t>::max() - x.shape[d].extent();
          if (low[d] > room || high[d] > room - low[d]) {
            throw UserError(fmt::format("pad: axis {} of the result would exceed 2^63 - 1 elements", d));
          }
          out.push_back(Dim(x.shape[d].extent() + low[d] + high[d]));
        }
      }
      const AttrValue* v = attrs.find("value");
      attrs.set("value", normalize_scalar(k, v ? *v : AttrValue(int64_t{0}), x.dtype));
      return {x.dtype, out};
    }
    case OpKind::Gather: {
      const TensorType& x = in[0];
      const TensorType& idx = in[1];
      if (x.rank() == 0) throw UserError("gather: the operand must have rank >= 1");
      if (idx.dtype != DType::i32 && idx.dtype != DType::i64) {
        throw UserError(fmt::format("gather: indices must be i32 or i64, got {}", dtype_name(idx.dtype)));
      }
      const AttrValue* a = attrs.find("axis");
      int64_t axis = normalize_axis(a ? a->as_int() : 0, x.rank(), "gather");
      attrs.set("axis", AttrValue(axis));
      Shape out(x.shape.begin(), x.shape.begin() + axis);
      out.insert(out.end(), idx.shape.begin(), idx.shape.end());
      out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
      return {x.dtype, out};
    }
    case OpKind::Iota: {
      // A copy: the attrs.set calls below may reallocate the attribute storage.
      Shape shape = attrs.get("shape").as_shape();
      check_dims(k, shape, "shape");
      const AttrValue* t = attrs.find("dtype");
      DType dtype = t ? t->as_dtype() : DType::i64;
      require(!is_bool(dtype), k, dtype, "numeric");
      attrs.set("axis", AttrValue(normalize_axis(attrs.get("axis").as_int(), static_cast<int>(shape.size()), "iota")));
      attrs.set("dtype", AttrValue(dtype));
      return {dtype, shape};
    }
    case OpKind::Constant: {
      const AttrValue* t = attrs.find("dtype");
      DType dtype = t ? t->as_dtype() : DType::f32;
      const AttrValue* s = attrs.find("shape");
      Shape shape = s ? s->as_shape() : Shape{};
      check_dims(k, shape, "shape");
      attrs.set("value", normalize_scalar(k, attrs.get("value"), dtype));
      attrs.set("shape", AttrValue(shape));
      attrs.set("dtype", AttrValue(dtype));
      return {dtype, shape};
    }
    case OpKind::Dot: return infer_dot(in[0], in[1]);
    case OpKind::Attention: return infer_attention(in, attrs);
    case OpKind::Conv: return infer_conv(in, attrs);
    default: break;
  }
  STITCH_ASSERT(false, fmt::format("infer_type: unhandled op {}", info.name));
}

}  // namespace stitch
