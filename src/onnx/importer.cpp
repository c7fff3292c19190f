#include "onnx/importer.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <unordered_map>

#include "stitch/builder.h"

namespace stitch::onnx_import {

namespace {

using ::onnx::AttributeProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

std::optional<DType> dtype_of(int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::FLOAT: return DType::f32;
    case TensorProto::DOUBLE: return DType::f64;
    case TensorProto::FLOAT16: return DType::f16;
    case TensorProto::BFLOAT16: return DType::bf16;
    case TensorProto::INT8: return DType::i8;
    case TensorProto::INT32: return DType::i32;
    case TensorProto::INT64: return DType::i64;
    case TensorProto::BOOL: return DType::boolean;
    default: return std::nullopt;
  }
}

std::string elem_type_name(int32_t elem_type) {
  if (TensorProto::DataType_IsValid(elem_type)) {
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elem_type));
  }
  return fmt::format("#{}", elem_type);
}

// Graph IR names are identifiers; ONNX names may hold '/', ':' or '.'.
std::string sanitize(const std::string& onnx_name) {
  std::string s;
  for (char c : onnx_name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v_" + s;
  return s;
}

const std::unordered_map<std::string, OpKind>& unary_ops() {
  static const std::unordered_map<std::string, OpKind> kOps = {
      {"Neg", OpKind::Neg},   {"Abs", OpKind::Abs},         {"Exp", OpKind::Exp},         {"Log", OpKind::Log},
      {"Sqrt", OpKind::Sqrt}, {"Reciprocal", OpKind::Reciprocal}, {"Tanh", OpKind::Tanh}, {"Sigmoid", OpKind::Sigmoid},
      {"Relu", OpKind::Relu}, {"Erf", OpKind::Erf},         {"Not", OpKind::Not},         {"Floor", OpKind::Floor},
      {"Ceil", OpKind::Ceil},
  };
  return kOps;
}

const std::unordered_map<std::string, OpKind>& binary_ops() {
  static const std::unordered_map<std::string, OpKind> kOps = {
      {"Add", OpKind::Add}, {"Sub", OpKind::Sub},  {"Mul", OpKind::Mul},     {"Div", OpKind::Div},
      {"Pow", OpKind::Pow}, {"Max", OpKind::Max},  {"Min", OpKind::Min},     {"Equal", OpKind::Eq},
      {"Less", OpKind::Lt}, {"Greater", OpKind::Gt}, {"And", OpKind::And},   {"Or", OpKind::Or},
  };
  return kOps;
}

const std::unordered_map<std::string, OpKind>& reduce_ops() {
  static const std::unordered_map<std::string, OpKind> kOps = {
      {"ReduceSum", OpKind::ReduceSum}, {"ReduceMean", OpKind::ReduceMean}, {"ReduceMax", OpKind::ReduceMax}};
  return kOps;
}

bool is_supported(const NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
  const std::string& t = n.op_type();
  static const std::set<std::string> kOthers = {"Where", "Cast", "Identity", "MatMul", "Transpose", "Softmax",
                                                "Constant"};
  return unary_ops().count(t) || binary_ops().count(t) || reduce_ops().count(t) || kOthers.count(t);
}

Tensor tensor_from_proto(const TensorProto& p) {
  std::optional<DType> dtype = dtype_of(p.data_type());
  if (!dtype) {
    throw UserError(fmt::format("initializer '{}' has element type {}, which Stitch does not support", p.name(),
                                elem_type_name(p.data_type())));
  }
  if (p.data_location() == TensorProto::EXTERNAL) {
    throw UserError(fmt::format("initializer '{}' keeps its data in an external file, not supported yet", p.name()));
  }
  std::vector<int64_t> shape(p.dims().begin(), p.dims().end());
  Tensor t(*dtype, shape);
  if (p.has_raw_data()) {
    if (p.raw_data().size() != t.nbytes()) {
      throw UserError(fmt::format("initializer '{}': raw_data holds {} bytes, its type needs {}", p.name(),
                                  p.raw_data().size(), t.nbytes()));
    }
    std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    return t;
  }
  auto check_count = [&](int count) {
    if (count != t.numel()) {
      throw UserError(fmt::format("initializer '{}' holds {} values, its shape needs {}", p.name(), count, t.numel()));
    }
  };
  switch (*dtype) {
    case DType::f32:
      check_count(p.float_data_size());
      for (int i = 0; i < p.float_data_size(); ++i) t.data<float>()[i] = p.float_data(i);
      break;
    case DType::f64:
      check_count(p.double_data_size());
      for (int i = 0; i < p.double_data_size(); ++i) t.data<double>()[i] = p.double_data(i);
      break;
    case DType::i64:
      check_count(p.int64_data_size());
      for (int i = 0; i < p.int64_data_size(); ++i) t.data<int64_t>()[i] = p.int64_data(i);
      break;
    case DType::f16:
    case DType::bf16:
      // The 16 bits of each value sit in the low half of an int32_data entry.
      check_count(p.int32_data_size());
      for (int i = 0; i < p.int32_data_size(); ++i) t.data<uint16_t>()[i] = static_cast<uint16_t>(p.int32_data(i));
      break;
    case DType::i8:
    case DType::i32:
    case DType::boolean:
      check_count(p.int32_data_size());
      for (int i = 0; i < p.int32_data_size(); ++i) t.set_i64(i, p.int32_data(i));
      break;
  }
  return t;
}

bool all_equal(const Tensor& t) {
  for (int64_t i = 1; i < t.numel(); ++i) {
    if (t.get_i64(i) != t.get_i64(0) || t.get_f64(i) != t.get_f64(0)) return false;
  }
  return true;
}

class Importer {
 public:
  explicit Importer(const std::string& path) : path_(path), b_("main") {}

  ImportedModel run(const ::onnx::GraphProto& gp) {
    std::set<std::string> initializer_names;
    for (const TensorProto& init : gp.initializer()) initializer_names.insert(init.name());
    for (const auto& in : gp.input()) {
      if (!initializer_names.count(in.name())) add_input(in);
    }
    for (const TensorProto& init : gp.initializer()) add_tensor(init.name(), tensor_from_proto(init));
    for (const NodeProto& n : gp.node()) {
      try {
        add_node(n);
      } catch (const UserError& e) {
        throw UserError(fmt::format("{}: node '{}' ({}): {}", path_, n.name(), n.op_type(), e.what()));
      }
    }
    for (const auto& out : gp.output()) b_.output(value(out.name()), sanitize(out.name()));
    ImportedModel m{b_.finish(), std::move(bound_)};
    return m;
  }

 private:
  std::string fresh(const std::string& onnx_name) {
    std::string s = sanitize(onnx_name);
    return b_.graph().has_name(s) ? b_.fresh_name(s) : s;
  }

  void add_input(const ::onnx::ValueInfoProto& in) {
    const auto& tt = in.type().tensor_type();
    std::optional<DType> dtype = dtype_of(tt.elem_type());
    if (!in.type().has_tensor_type() || !dtype) {
      throw UserError(fmt::format("{}: input '{}' has element type {}, which Stitch does not support", path_,
                                  in.name(), elem_type_name(tt.elem_type())));
    }
    if (!tt.has_shape()) throw UserError(fmt::format("{}: input '{}' has no shape", path_, in.name()));
    Shape shape;
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value()) {
        shape.push_back(Dim(dim.dim_value()));
      } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
        shape.push_back(Dim::symbol(sanitize(dim.dim_param())));
      } else {
        throw UserError(fmt::format("{}: input '{}': dim {} is unknown and unnamed (give it a dim_param)", path_,
                                    in.name(), d));
      }
    }
    values_[in.name()] = b_.param(fresh(in.name()), *dtype, shape);
  }

  // An initializer or Constant: a splat constant when all its elements agree,
  // else a parameter bound to the tensor (docs/onnx.md, Decisions).
  void add_tensor(const std::string& onnx_name, Tensor t) {
    std::string name = fresh(onnx_name);
    Shape shape(t.shape().begin(), t.shape().end());
    if (t.numel() > 0 && all_equal(t)) {
      bool integral = t.dtype() == DType::i8 || t.dtype() == DType::i32 || t.dtype() == DType::i64;
      // Integers beyond 2^53 do not survive a double; they stay bound tensors.
      if (!integral || static_cast<int64_t>(t.get_f64(0)) == t.get_i64(0)) {
        values_[onnx_name] = b_.constant(t.get_f64(0), t.dtype(), shape, name);
        consts_.emplace(onnx_name, std::move(t));
        return;
      }
    }
    values_[onnx_name] = b_.param(name, t.dtype(), shape);
    consts_.emplace(onnx_name, t);
    bound_.emplace(name, std::move(t));
  }

  ValueId value(const std::string& onnx_name) const {
    auto it = values_.find(onnx_name);
    if (it == values_.end()) throw UserError(fmt::format("value '{}' is used but never defined", onnx_name));
    return it->second;
  }

  const AttributeProto* attr(const NodeProto& n, const std::string& name) const {
    for (const AttributeProto& a : n.attribute()) {
      if (a.name() == name) return &a;
    }
    return nullptr;
  }
  int64_t int_attr(const NodeProto& n, const std::string& name, int64_t fallback) const {
    const AttributeProto* a = attr(n, name);
    return a ? a->i() : fallback;
  }
  std::optional<std::vector<int64_t>> ints_attr(const NodeProto& n, const std::string& name) const {
    const AttributeProto* a = attr(n, name);
    if (!a) return std::nullopt;
    return std::vector<int64_t>(a->ints().begin(), a->ints().end());
  }

  void define(const NodeProto& n, ValueId v) { values_[n.output(0)] = v; }
  std::string out_name(const NodeProto& n) { return fresh(n.output(0)); }

  void require_inputs(const NodeProto& n, int lo, int hi) const {
    if (n.input_size() < lo || n.input_size() > hi) {
      throw UserError(fmt::format("expects {} to {} inputs, has {}", lo, hi, n.input_size()));
    }
  }

  void add_node(const NodeProto& n) {
    const std::string& t = n.op_type();
    if (n.output_size() != 1) throw UserError(fmt::format("expects one output, has {}", n.output_size()));
    if (t == "Constant") {
      add_constant_node(n);
    } else if (auto u = unary_ops().find(t); u != unary_ops().end()) {
      require_inputs(n, 1, 1);
      define(n, b_.unary(u->second, value(n.input(0)), out_name(n)));
    } else if (auto bi = binary_ops().find(t); bi != binary_ops().end()) {
      add_binary(n, bi->second);
    } else if (auto r = reduce_ops().find(t); r != reduce_ops().end()) {
      add_reduce(n, r->second);
    } else if (t == "Identity") {
      require_inputs(n, 1, 1);
      define(n, value(n.input(0)));
    } else if (t == "Where") {
      require_inputs(n, 3, 3);
      define(n, b_.op(OpKind::Select, {value(n.input(0)), value(n.input(1)), value(n.input(2))}, {}, out_name(n)));
    } else if (t == "Cast") {
      require_inputs(n, 1, 1);
      int64_t to = int_attr(n, "to", 0);
      std::optional<DType> dtype = dtype_of(static_cast<int32_t>(to));
      if (!dtype) throw UserError(fmt::format("cast to {} is not supported", elem_type_name(static_cast<int32_t>(to))));
      define(n, b_.cast(value(n.input(0)), *dtype, out_name(n)));
    } else if (t == "MatMul") {
      require_inputs(n, 2, 2);
      define(n, b_.op(OpKind::Dot, {value(n.input(0)), value(n.input(1))}, {}, out_name(n)));
    } else if (t == "Transpose") {
      require_inputs(n, 1, 1);
      ValueId x = value(n.input(0));
      std::vector<int64_t> perm;
      for (int d = b_.graph().type(x).rank() - 1; d >= 0; --d) perm.push_back(d);
      define(n, b_.transpose(x, ints_attr(n, "perm").value_or(perm), out_name(n)));
    } else if (t == "Softmax") {
      require_inputs(n, 1, 1);
      // Opset 13 semantics: one axis, default -1 (opsets < 13 flattened).
      define(n, b_.op("softmax", {value(n.input(0))}, {{"axis", AttrValue(int_attr(n, "axis", -1))}}, out_name(n)));
    } else {
      throw UserError("internal: op passed the support check but has no conversion");
    }
  }

  void add_binary(const NodeProto& n, OpKind kind) {
    bool variadic = n.op_type() == "Max" || n.op_type() == "Min";
    require_inputs(n, variadic ? 1 : 2, variadic ? 1 << 20 : 2);
    ValueId acc = value(n.input(0));
    if (n.input_size() == 1) {
      define(n, acc);
      return;
    }
    for (int i = 1; i < n.input_size(); ++i) {
      ValueId rhs = value(n.input(i));
      // ONNX Pow allows an exponent of another type; the IR wants one dtype.
      if (kind == OpKind::Pow && b_.graph().type(rhs).dtype != b_.graph().type(acc).dtype) {
        rhs = b_.cast(rhs, b_.graph().type(acc).dtype);
      }
      acc = b_.binary(kind, acc, rhs, i + 1 == n.input_size() ? out_name(n) : "");
    }
    define(n, acc);
  }

  void add_reduce(const NodeProto& n, OpKind kind) {
    ValueId x = value(n.input(0));
    bool keepdims = int_attr(n, "keepdims", 1) != 0;
    std::optional<std::vector<int64_t>> axes;
    // ReduceSum takes axes as an input from opset 13; the others until opset 18 as an attribute.
    if (kind == OpKind::ReduceSum) {
      require_inputs(n, 1, 2);
      if (n.input_size() == 2 && !n.input(1).empty()) {
        auto c = consts_.find(n.input(1));
        if (c == consts_.end()) throw UserError("the axes input must be an initializer or a Constant");
        std::vector<int64_t> v;
        for (int64_t i = 0; i < c->second.numel(); ++i) v.push_back(c->second.get_i64(i));
        axes = v;
      }
    } else {
      require_inputs(n, 1, 1);
      axes = ints_attr(n, "axes");
    }
    if (!axes || axes->empty()) {
      if (int_attr(n, "noop_with_empty_axes", 0) != 0) {
        define(n, x);
        return;
      }
      axes = std::vector<int64_t>();
      for (int d = 0; d < b_.graph().type(x).rank(); ++d) axes->push_back(d);
    }
    define(n, b_.reduce(kind, x, *axes, keepdims, out_name(n)));
  }

  void add_constant_node(const NodeProto& n) {
    if (const AttributeProto* v = attr(n, "value")) {
      TensorProto p = v->t();
      p.set_name(n.output(0));
      add_tensor(n.output(0), tensor_from_proto(p));
    } else if (const AttributeProto* f = attr(n, "value_float")) {
      Tensor t(DType::f32, {});
      t.set_f64(0, f->f());
      add_tensor(n.output(0), std::move(t));
    } else if (const AttributeProto* i = attr(n, "value_int")) {
      Tensor t(DType::i64, {});
      t.set_i64(0, i->i());
      add_tensor(n.output(0), std::move(t));
    } else if (const AttributeProto* is = attr(n, "value_ints")) {
      Tensor t(DType::i64, {is->ints_size()});
      for (int k = 0; k < is->ints_size(); ++k) t.set_i64(k, is->ints(k));
      add_tensor(n.output(0), std::move(t));
    } else {
      throw UserError("only the value, value_float, value_int and value_ints forms of Constant are supported");
    }
  }

  std::string path_;
  GraphBuilder b_;
  std::unordered_map<std::string, ValueId> values_;
  std::unordered_map<std::string, Tensor> consts_;  // initializers and Constant outputs, for axes inputs
  std::map<std::string, Tensor> bound_;
};

}  // namespace

ImportedModel import_onnx(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open file", path));
  ::onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) {
    throw UserError(fmt::format("{}: not a valid ONNX model (protobuf parse of ModelProto failed)", path));
  }
  if (!model.has_graph()) throw UserError(fmt::format("{}: not a valid ONNX model (no graph)", path));
  std::optional<int64_t> opset;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  if (!opset) throw UserError(fmt::format("{}: the model imports no default-domain opset", path));
  if (*opset < kMinOpset || *opset > kMaxOpset) {
    throw UserError(fmt::format("{}: opset {} is not supported (supported: {} to {})", path, *opset, kMinOpset,
                                kMaxOpset));
  }
  std::vector<std::string> unsupported;
  for (const NodeProto& n : model.graph().node()) {
    if (is_supported(n)) continue;
    std::string domain = n.domain().empty() ? "" : n.domain() + ".";
    unsupported.push_back(fmt::format("op {}{} (node {}, opset {})", domain, n.op_type(),
                                      n.name().empty() ? "<unnamed>" : n.name(), *opset));
  }
  if (!unsupported.empty()) {
    std::string list;
    for (const std::string& u : unsupported) list += "\n  " + u;
    throw UserError(fmt::format("{}: {} unsupported op(s):{}", path, unsupported.size(), list));
  }
  return Importer(path).run(model.graph());
}

}  // namespace stitch::onnx_import
