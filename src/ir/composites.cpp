#include "ir/composites.h"
#include "ir/composite_attrs.h"
#include "ir/composites_nn.h"
#include "ir/composites_resize.h"
#include "ir/composites_top_k.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>

namespace stitch {

namespace {

struct CompositeSpec {
  std::string_view name;
  int min_inputs;
  int max_inputs;
  std::vector<std::string_view> attrs;
};

const std::vector<CompositeSpec>& specs() {
  static const std::vector<CompositeSpec> kSpecs = {
      {"softmax", 1, 1, {"axis"}},
      {"log_softmax", 1, 1, {"axis"}},
      {"logsumexp", 1, 1, {"axes", "keepdims"}},
      {"layer_norm", 1, 3, {"axes", "eps"}},
      {"rms_norm", 1, 2, {"axes", "eps"}},
      {"gelu", 1, 1, {"approximate"}},
      {"silu", 1, 1, {}},
      {"max_pool", 1, 1, {"kernel_shape", "strides", "pads", "dilations", "ceil_mode"}},
      {"avg_pool", 1, 1, {"kernel_shape", "strides", "pads", "ceil_mode", "count_include_pad"}},
      {"resize",
       1,
       1,
       {"axes", "sizes", "scales", "mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
        "exclude_outside", "roi", "extrapolation_value"}},
      {"top_k", 1, 1, {"k", "axis", "largest"}},
      {"top_k_indices", 1, 1, {"k", "axis", "largest"}},
  };
  return kSpecs;
}

const CompositeSpec* find_spec(std::string_view name) {
  for (const CompositeSpec& s : specs()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::vector<int64_t> all_axes(int rank) {
  std::vector<int64_t> axes(rank);
  for (int i = 0; i < rank; ++i) axes[i] = i;
  return axes;
}

}  // namespace

bool is_composite_op(std::string_view name) { return find_spec(name) != nullptr; }

const std::vector<std::string_view>& composite_op_names() {
  static const std::vector<std::string_view> kNames = [] {
    std::vector<std::string_view> names;
    for (const CompositeSpec& s : specs()) names.push_back(s.name);
    return names;
  }();
  return kNames;
}

ValueId expand_composite(GraphBuilder& b, std::string_view name, const std::vector<ValueId>& args,
                         const Attrs& attrs, const std::string& result_name) {
  const CompositeSpec* spec = find_spec(name);
  STITCH_ASSERT(spec != nullptr, "not a composite op");
  int n = static_cast<int>(args.size());
  if (n < spec->min_inputs || n > spec->max_inputs) {
    throw UserError(spec->min_inputs == spec->max_inputs
                        ? fmt::format("{} takes {} operand{}, got {}", name, spec->min_inputs,
                                      spec->min_inputs == 1 ? "" : "s", n)
                        : fmt::format("{} takes {} to {} operands, got {}", name, spec->min_inputs,
                                      spec->max_inputs, n));
  }
  for (const auto& [key, value] : attrs.items()) {
    if (std::find(spec->attrs.begin(), spec->attrs.end(), key) == spec->attrs.end()) {
      throw UserError(fmt::format("unknown attribute '{}' for {}", key, name));
    }
  }
  ValueId x = args[0];
  // These take integer operands too.
  if (name == "resize") return expand_resize(b, x, attrs, result_name);
  if (name == "top_k" || name == "top_k_indices") return expand_top_k(b, name, x, attrs, result_name);
  const TensorType& xt = b.graph().type(x);
  if (!is_float(xt.dtype)) {
    throw UserError(fmt::format("{} expects a floating operand, got {}", name, dtype_name(xt.dtype)));
  }
  CompositeAttrs a(name, attrs);
  std::string r = result_name;
  auto tmp = [&](const char* suffix) { return b.fresh_name(r + "_" + suffix); };
  auto reduce = [&](OpKind k, ValueId v, const std::vector<int64_t>& axes, bool keep, const char* suffix) {
    return b.reduce(k, v, axes, keep, tmp(suffix));
  };

  if (name == "softmax" || name == "log_softmax") {
    std::vector<int64_t> axes{a.integer("axis", -1)};
    ValueId m = reduce(OpKind::ReduceMax, x, axes, true, "max");
    ValueId xc = b.sub(x, m, tmp("shifted"));
    ValueId e = b.exp(xc, tmp("exp"));
    ValueId s = reduce(OpKind::ReduceSum, e, axes, true, "sum");
    if (name == "softmax") return b.div(e, s, r);
    return b.sub(xc, b.unary(OpKind::Log, s, tmp("log")), r);
  }
  if (name == "logsumexp") {
    std::vector<int64_t> axes = a.ints("axes").value_or(all_axes(xt.rank()));
    bool keepdims = a.boolean("keepdims", false);
    ValueId m = reduce(OpKind::ReduceMax, x, axes, true, "max");
    // An all -inf (or inf/nan) slice has a non-finite max; shift by 0 there so
    // the result is -inf/inf/nan as the math says, not nan from inf - inf.
    ValueId finite = b.op(OpKind::Not, {b.op(OpKind::Or, {b.unary(OpKind::IsInf, m, tmp("isinf")),
                                                          b.unary(OpKind::IsNan, m, tmp("isnan"))},
                                             {}, tmp("nonfinite"))},
                          {}, tmp("finite"));
    ValueId shift = b.op(OpKind::Select, {finite, m, 0.0}, {}, tmp("shift"));
    ValueId e = b.exp(b.sub(x, shift, tmp("shifted")), tmp("exp"));
    ValueId s = reduce(OpKind::ReduceSum, e, axes, keepdims, "sum");
    ValueId shift_out = shift;
    if (!keepdims) shift_out = b.reshape(shift, b.graph().type(s).shape, tmp("shift_r"));
    return b.add(b.unary(OpKind::Log, s, tmp("log")), shift_out, r);
  }
  if (name == "layer_norm" || name == "rms_norm") {
    bool layer = name == "layer_norm";
    std::vector<int64_t> axes = a.ints("axes").value_or(std::vector<int64_t>{-1});
    double eps = a.number("eps", layer ? 1e-5 : 1e-6);
    ValueId centred = x;
    if (layer) {
      ValueId mean = reduce(OpKind::ReduceMean, x, axes, true, "mean");
      centred = b.sub(x, mean, tmp("centred"));
    }
    ValueId sq = b.mul(centred, centred, tmp("sq"));
    ValueId var = reduce(OpKind::ReduceMean, sq, axes, true, layer ? "var" : "ms");
    ValueId rstd = b.unary(OpKind::Rsqrt, b.add(var, eps, tmp("var_eps")), tmp("rstd"));
    bool has_gamma = n >= 2, has_beta = n >= 3;
    ValueId y = b.mul(centred, rstd, has_gamma ? tmp("norm") : (has_beta ? tmp("norm") : r));
    if (has_gamma) y = b.mul(y, args[1], has_beta ? tmp("scaled") : r);
    if (has_beta) y = b.add(y, args[2], r);
    return y;
  }
  if (name == "gelu") {
    std::string approx = a.string("approximate", "none");
    ValueId inner;
    if (approx == "none") {
      // 0.5 x (1 + erf(x / sqrt 2))
      inner = b.unary(OpKind::Erf, b.mul(x, 1.0 / std::numbers::sqrt2, tmp("scaled")), tmp("erf"));
    } else if (approx == "tanh") {
      // 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3), written
      // x sigmoid(2u): the same function (1 + tanh(u) = 2 sigmoid(2u)), two
      // ops fewer, and no cancellation in 1 + tanh(u) for negative x, so each
      // rounding is relative to the result (docs/semantics.md, Composites).
      ValueId cube = b.mul(b.mul(x, x, tmp("sq")), x, tmp("cube"));
      ValueId poly = b.add(x, b.mul(cube, 0.044715, tmp("cube_scaled")), tmp("poly"));
      double k = 2.0 * std::sqrt(2.0 / std::numbers::pi);
      return b.mul(x, b.unary(OpKind::Sigmoid, b.mul(poly, k, tmp("arg")), tmp("sigmoid")), r);
    } else {
      throw UserError(fmt::format("gelu: approximate must be \"none\" or \"tanh\", got \"{}\"", approx));
    }
    ValueId half_x = b.mul(x, 0.5, tmp("half"));
    return b.mul(half_x, b.add(inner, 1.0, tmp("one_plus")), r);
  }
  if (name == "max_pool" || name == "avg_pool") return expand_pool(b, name, args[0], attrs, r);
  if (name == "silu") {
    return b.mul(x, b.unary(OpKind::Sigmoid, x, tmp("sigmoid")), r);
  }
  STITCH_ASSERT(false, fmt::format("composite {} has no expansion", name));
}

}  // namespace stitch
