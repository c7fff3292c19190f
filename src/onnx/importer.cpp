#include "onnx/importer.h"

#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>

#include "onnx/context.h"
#include "onnx/external_data.h"
#include "onnx/shape_values.h"
#include "stitch/interpreter.h"
#include "stitch/shape.h"

namespace stitch::onnx_import {

using ::onnx::NodeProto;
using ::onnx::TensorProto;

std::optional<DType> dtype_of_onnx(int32_t elem_type) {
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

Tensor tensor_from_proto(const TensorProto& p) {
  std::optional<DType> dtype = dtype_of_onnx(p.data_type());
  if (!dtype) {
    throw UserError(fmt::format("tensor '{}' has element type {}, which Stitch does not support", p.name(),
                                elem_type_name(p.data_type())));
  }
  if (p.data_location() == TensorProto::EXTERNAL) {
    throw UserError(fmt::format("tensor '{}' keeps its data in an external file, read only for a model's tensors", p.name()));
  }
  std::vector<int64_t> shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape) {
    if (d < 0) throw UserError(fmt::format("tensor '{}' has a negative dim {}", p.name(), d));
  }
  // Sizes from the file are checked before anything is allocated for them:
  // the shape against the limit on one tensor, then the data against the shape.
  const std::string what = fmt::format("tensor '{}'", p.name());
  check_tensor_size(what, *dtype, shape);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;  // within kMaxTensorBytes, checked above
  const uint64_t nbytes = static_cast<uint64_t>(numel) * static_cast<uint64_t>(dtype_size(*dtype));
  if (p.has_raw_data() && p.raw_data().size() != nbytes) {
    throw UserError(fmt::format("tensor '{}': raw_data holds {} bytes, its type needs {}", p.name(),
                                p.raw_data().size(), nbytes));
  }
  const int values = *dtype == DType::f32   ? p.float_data_size()
                     : *dtype == DType::f64 ? p.double_data_size()
                     : *dtype == DType::i64 ? p.int64_data_size()
                                            : p.int32_data_size();
  if (!p.has_raw_data() && values != numel) {
    throw UserError(fmt::format("tensor '{}' holds {} values, its shape needs {}", p.name(), values, numel));
  }
  Tensor t = allocate_tensor(what, *dtype, shape);
  if (p.has_raw_data()) {
    std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    return t;
  }
  auto check_count = [&](int count) {
    if (count != t.numel()) {
      throw UserError(fmt::format("tensor '{}' holds {} values, its shape needs {}", p.name(), count, t.numel()));
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

Tensor load_tensor_pb(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open file", path));
  TensorProto p;
  if (!p.ParseFromIstream(&in)) throw UserError(fmt::format("{}: not a valid ONNX TensorProto", path));
  try {
    return tensor_from_proto(p);
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", path, e.what()));
  }
}

const ConverterTable& converters() {
  static const ConverterTable kTable = [] {
    ConverterTable t;
    register_elementwise_ops(t);
    register_reduce_ops(t);
    register_shape_ops(t);
    register_nn_ops(t);
    register_index_ops(t);
    register_einsum_op(t);
    register_cnn_ops(t);
    return t;
  }();
  return kTable;
}

namespace {

// A model below kMinOpset is imported when each of its ops has kept its
// definition from the model's opset through kMinOpset: ONNX's schema registry
// gives both opsets the same since_version (docs/onnx.md, Opsets). Returns
// the ops for which that fails, one line each.
std::vector<std::string> ops_changed_since(const ::onnx::GraphProto& g, int64_t opset) {
  std::vector<std::string> changed;
  std::set<std::string> seen;
  for (const NodeProto& n : g.node()) {
    if ((!n.domain().empty() && n.domain() != "ai.onnx") || !seen.insert(n.op_type()).second) continue;
    const auto* old_schema = ::onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset));
    const auto* schema = ::onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(kMinOpset));
    if (!old_schema) {
      changed.push_back(fmt::format("op {} (node {}) does not exist in opset {}", n.op_type(),
                                    n.name().empty() ? "<unnamed>" : n.name(), opset));
    } else if (schema && schema->SinceVersion() != old_schema->SinceVersion()) {
      changed.push_back(fmt::format("op {} (node {}): its opset-{} definition (since opset {}) differs from the "
                                    "opset-{} one (since opset {})",
                                    n.op_type(), n.name().empty() ? "<unnamed>" : n.name(), opset,
                                    old_schema->SinceVersion(), kMinOpset, schema->SinceVersion()));
    }
  }
  return changed;
}

bool is_supported(const NodeProto& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return false;
  return n.op_type() == "Constant" || converters().count(n.op_type()) > 0;
}

class Importer {
 public:
  Importer(const std::string& path, int64_t opset, const ImportOptions& options,
           const std::vector<ImportContext::Late>& late)
      : ctx_(path, opset), options_(options), late_(late) {}

  // The model, or nullopt with `late` set when a second pass must declare
  // late bound parameters up front (ImportContext::Late).
  std::optional<ImportedModel> run(const ::onnx::GraphProto& gp, std::vector<ImportContext::Late>& late) {
    std::set<std::string> initializer_names;
    for (const TensorProto& init : gp.initializer()) initializer_names.insert(init.name());
    for (const auto& in : gp.input()) {
      if (!initializer_names.count(in.name())) add_input(in);
    }
    ctx_.predeclare(late_);
    for (const TensorProto& init : gp.initializer()) ctx_.define_known(init.name(), tensor_from_proto(init));
    for (const NodeProto& n : gp.node()) {
      try {
        add_node(n);
      } catch (const NeedsKnownInput& e) {
        throw NeedsKnownInput(fmt::format("{}: node '{}' ({}): {}", ctx_.path(), n.name(), n.op_type(), e.what()),
                              e.input());
      } catch (const UserError& e) {
        throw UserError(fmt::format("{}: node '{}' ({}): {}", ctx_.path(), n.name(), n.op_type(), e.what()));
      }
    }
    GraphBuilder& b = ctx_.builder();
    for (const auto& out : gp.output()) {
      ValueId v = ctx_.value(out.name());
      b.output(v, ImportContext::sanitize(out.name()));
    }
    if (!ctx_.late().empty()) {
      late = ctx_.late();
      return std::nullopt;
    }
    return ImportedModel{b.finish(), std::move(ctx_.bound()), std::move(input_names_)};
  }

 private:
  void add_input(const ::onnx::ValueInfoProto& in) {
    const auto& tt = in.type().tensor_type();
    std::optional<DType> dtype = dtype_of_onnx(tt.elem_type());
    if (!in.type().has_tensor_type() || !dtype) {
      throw UserError(fmt::format("{}: input '{}' has element type {}, which Stitch does not support", ctx_.path(),
                                  in.name(), elem_type_name(tt.elem_type())));
    }
    if (auto k = options_.known_inputs.find(in.name()); k != options_.known_inputs.end()) {
      add_known_input(in, *dtype, k->second);
      return;
    }
    if (!tt.has_shape()) throw UserError(fmt::format("{}: input '{}' has no shape", ctx_.path(), in.name()));
    Shape shape;
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value()) {
        shape.push_back(Dim(dim.dim_value()));
      } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
        shape.push_back(Dim::symbol(ImportContext::sanitize(dim.dim_param())));
      } else {
        throw UserError(fmt::format("{}: input '{}': dim {} is unknown and unnamed (give it a dim_param)",
                                    ctx_.path(), in.name(), d));
      }
    }
    ctx_.mark_graph_input(in.name());
    ValueId v = ctx_.add_param(in.name(), *dtype, shape);
    const std::string& name = ctx_.graph().value_name(v);
    if (name != in.name()) input_names_[in.name()] = name;
  }

  // A graph input given as a known value must match its declaration.
  void add_known_input(const ::onnx::ValueInfoProto& in, DType dtype, const Tensor& t) {
    const auto& tt = in.type().tensor_type();
    bool ok = t.dtype() == dtype;
    if (tt.has_shape()) {
      ok = ok && tt.shape().dim_size() == t.rank();
      for (int d = 0; ok && d < tt.shape().dim_size(); ++d) {
        if (tt.shape().dim(d).has_dim_value()) ok = tt.shape().dim(d).dim_value() == t.shape()[static_cast<size_t>(d)];
      }
    }
    if (!ok) {
      throw UserError(fmt::format("{}: input '{}': the known value {} does not match the declared type", ctx_.path(),
                                  in.name(), t.str(4)));
    }
    ctx_.define_known(in.name(), t);
  }

  void add_node(const NodeProto& n) {
    if (n.op_type() == "Constant") {
      add_constant_node(n);
      return;
    }
    const Converter& convert = converters().at(n.op_type());
    bool all_known = true, all_shape_like = true;
    for (int i = 0; i < n.input_size(); ++i) {
      if (n.input(i).empty()) continue;
      all_known = all_known && ctx_.known(n.input(i));
      all_shape_like = all_shape_like && (ctx_.known(n.input(i)) || ctx_.shape_value(n.input(i)));
    }
    // Shape arithmetic on symbolic dims (docs/onnx.md, Symbolic shape arithmetic).
    if (!all_known && all_shape_like && has_shape_value_input(ctx_, n)) {
      if (fold_shape_values(ctx_, n)) return;
      // Range makes data of a symbolic extent: an iota (ops_shape.cpp).
      if (n.op_type() == "Range") {
        convert(ctx_, n);
        return;
      }
      throw UserError(fmt::format("{} of values computed from symbolic dims is not folded (the IR needs every "
                                  "shape at import time)",
                                  n.op_type()));
    }
    if (all_known && n.input_size() > 0) {
      fold(n, convert);
    } else {
      convert(ctx_, n);
    }
  }

  // A node whose inputs are all known tensors (shape arithmetic, weight
  // transposes) is run once, now, by the reference interpreter; its outputs
  // become known tensors (docs/onnx.md, Folding).
  void fold(const NodeProto& n, const Converter& convert) {
    ImportContext sub(ctx_.path(), ctx_.opset(), "fold");
    // Every input a parameter, declared before the converter adds any op.
    for (int i = 0; i < n.input_size(); ++i) {
      if (!n.input(i).empty() && !sub.known(n.input(i))) sub.bind_param(n.input(i), *ctx_.known(n.input(i)));
    }
    convert(sub, n);
    std::vector<int> graph_outputs;
    for (int i = 0; i < n.output_size(); ++i) {
      if (n.output(i).empty()) continue;
      if (const Tensor* t = sub.known(n.output(i))) {
        ctx_.define_known(n.output(i), *t);
      } else {
        sub.builder().output(sub.value(n.output(i)), fmt::format("out{}", i));
        graph_outputs.push_back(i);
      }
    }
    if (graph_outputs.empty()) return;
    Graph g = sub.builder().finish();
    std::vector<Tensor> inputs;
    for (ValueId p : g.params()) inputs.push_back(sub.bound().at(g.value_name(p)));
    std::vector<Tensor> results = interpret(g, inputs);
    for (size_t k = 0; k < graph_outputs.size(); ++k) {
      ctx_.define_known(n.output(graph_outputs[k]), std::move(results[k]));
    }
  }

  void add_constant_node(const NodeProto& n) {
    ImportContext::require_inputs(n, 0, 0);
    if (!ImportContext::wants_output(n, 0)) return;  // a Constant that defines nothing
    if (const auto* v = ImportContext::attr(n, "value")) {
      ::onnx::TensorProto p = v->t();
      p.set_name(n.output(0));
      ctx_.define_known(n.output(0), tensor_from_proto(p));
    } else if (const auto* f = ImportContext::attr(n, "value_float")) {
      Tensor t(DType::f32, {});
      t.set_f64(0, f->f());
      ctx_.define_known(n.output(0), std::move(t));
    } else if (const auto* fs = ImportContext::attr(n, "value_floats")) {
      Tensor t(DType::f32, {fs->floats_size()});
      for (int k = 0; k < fs->floats_size(); ++k) t.set_f64(k, fs->floats(k));
      ctx_.define_known(n.output(0), std::move(t));
    } else if (const auto* i = ImportContext::attr(n, "value_int")) {
      Tensor t(DType::i64, {});
      t.set_i64(0, i->i());
      ctx_.define_known(n.output(0), std::move(t));
    } else if (const auto* is = ImportContext::attr(n, "value_ints")) {
      Tensor t(DType::i64, {is->ints_size()});
      for (int k = 0; k < is->ints_size(); ++k) t.set_i64(k, is->ints(k));
      ctx_.define_known(n.output(0), std::move(t));
    } else {
      throw UserError("only the value, value_float(s) and value_int(s) forms of Constant are supported");
    }
  }

  ImportContext ctx_;
  const ImportOptions& options_;
  std::vector<ImportContext::Late> late_;
  std::map<std::string, std::string> input_names_;
};

}  // namespace

ImportedModel import_onnx(const std::string& path, const ImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(fmt::format("{}: cannot open file", path));
  ::onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) {
    throw UserError(fmt::format("{}: not a valid ONNX model (protobuf parse of ModelProto failed)", path));
  }
  if (!model.has_graph()) throw UserError(fmt::format("{}: not a valid ONNX model (no graph)", path));
  try {
    load_external_data(*model.mutable_graph(), path);
  } catch (const UserError& e) {
    throw UserError(fmt::format("{}: {}", path, e.what()));
  }
  std::optional<int64_t> opset;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  if (!opset) throw UserError(fmt::format("{}: the model imports no default-domain opset", path));
  if (*opset < 1 || *opset > kMaxOpset) {
    throw UserError(fmt::format("{}: opset {} is not supported (supported: {} to {}, and older opsets whose ops "
                                "have not changed since)",
                                path, *opset, kMinOpset, kMaxOpset));
  }
  if (*opset < kMinOpset) {
    std::vector<std::string> changed = ops_changed_since(model.graph(), *opset);
    if (!changed.empty()) {
      std::string list;
      for (const std::string& c : changed) list += "\n  " + c;
      throw UserError(fmt::format("{}: opset {} is older than {} and {} op(s) changed since; Stitch imports only "
                                  "their opset {}-{} definitions:{}",
                                  path, *opset, kMinOpset, changed.size(), kMinOpset, kMaxOpset, list));
    }
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
  std::vector<ImportContext::Late> late;
  if (auto m = Importer(path, *opset, options, late).run(model.graph(), late)) return std::move(*m);
  std::vector<ImportContext::Late> again;
  auto m = Importer(path, *opset, options, late).run(model.graph(), again);
  STITCH_ASSERT(m.has_value(), "the second import pass found new late parameters");
  return std::move(*m);
}

}  // namespace stitch::onnx_import
