// The state one ONNX graph import shares with the op converters
// (docs/onnx.md). Each ONNX value is either a graph value (a ValueId) or a
// known tensor (an initializer, a Constant, or a folded shape computation);
// a known tensor enters the graph only when an op uses it as data, so a
// Reshape's shape input or a Slice's starts never become graph values.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "stitch/builder.h"
#include "stitch/tensor.h"

namespace stitch::onnx_import {

// One entry of an integer shape computation where a dim may be symbolic: a
// value, a symbol of the graph (its extent at run time), or opaque (a product
// with a symbol, which the IR's dims cannot name).
struct SymInt {
  int64_t value = 0;
  std::string symbol;
  bool opaque = false;

  static SymInt of(const Dim& d) { return d.is_static() ? SymInt{d.extent(), "", false} : SymInt{0, d.name(), false}; }
  bool is_static() const { return symbol.empty() && !opaque; }
  std::string str() const { return opaque ? "?" : symbol.empty() ? std::to_string(value) : symbol; }
};

// A known integer tensor of rank 0 or 1 some of whose entries are not static:
// what `Shape` of a value with symbolic dims gives, and what is computed from
// it (docs/onnx.md, Symbolic shape arithmetic).
struct ShapeValue {
  std::vector<SymInt> entries;
  bool scalar = false;
  DType dtype = DType::i64;
};

class ImportContext {
 public:
  ImportContext(std::string path, int64_t opset, std::string graph_name = "main");

  int64_t opset() const { return opset_; }
  GraphBuilder& builder() { return b_; }
  const Graph& graph() const { return b_.graph(); }
  const std::string& path() const { return path_; }

  // The graph value of ONNX value `name`; a known tensor is materialised on
  // first use (a splat constant when all its elements agree, else a parameter
  // bound to the tensor). UserError when the name was never defined.
  ValueId value(const std::string& name);
  // The i-th input of `n` as a graph value.
  ValueId input(const ::onnx::NodeProto& n, int i) { return value(n.input(i)); }
  // Whether input i is present (ONNX marks an omitted optional input by "").
  static bool has_input(const ::onnx::NodeProto& n, int i) { return i < n.input_size() && !n.input(i).empty(); }

  // The known tensor of `name`, if it is one.
  const Tensor* known(const std::string& name) const;
  // The shape value of `name`, if it is one; defining one with only static
  // entries defines a known tensor instead.
  const ShapeValue* shape_value(const std::string& name) const;
  void define_shape_value(const std::string& onnx_name, ShapeValue v);
  // Input i of `n` as integers that may be symbols: a known tensor's values or
  // a shape value's entries; UserError naming `what` for an opaque entry or
  // an input that is neither.
  std::vector<SymInt> known_sym_ints(const ::onnx::NodeProto& n, int i, const std::string& what) const;
  // The i-th input of `n`, which must be a known tensor; UserError naming
  // `what` otherwise ("the shape input", ...).
  const Tensor& known_input(const ::onnx::NodeProto& n, int i, const std::string& what) const;
  // A known integer tensor as a vector.
  static std::vector<int64_t> ints_of(const Tensor& t);

  // Static type facts of a graph value.
  const TensorType& type(ValueId v) const { return b_.graph().type(v); }
  int64_t rank(ValueId v) const { return type(v).rank(); }
  DType dtype(ValueId v) const { return type(v).dtype; }
  // Element type and shape of an ONNX value, known tensor or graph value.
  DType dtype_of_value(const std::string& name);
  Shape shape_of_value(const std::string& name);

  // Defines output i of `n` as a graph value or as a known tensor; an output
  // the node leaves out (empty, or past its last) is not wanted, and nothing
  // is defined.
  void define(const ::onnx::NodeProto& n, int i, ValueId v);
  void define(const ::onnx::NodeProto& n, ValueId v) { define(n, 0, v); }
  void define_known(const std::string& onnx_name, Tensor t);
  void define_known(const ::onnx::NodeProto& n, int i, Tensor t) {
    if (wants_output(n, i)) define_known(n.output(i), std::move(t));
  }
  // A fresh graph name for output i of `n`.
  std::string out_name(const ::onnx::NodeProto& n, int i = 0);
  // Whether output i of `n` is wanted (present and non-empty).
  static bool wants_output(const ::onnx::NodeProto& n, int i) { return i < n.output_size() && !n.output(i).empty(); }

  // Graph parameters: real inputs, and bound ones with their tensors.
  ValueId add_param(const std::string& onnx_name, DType dtype, const Shape& shape);
  // Defines `onnx_name` as a known tensor and at once as a bound parameter.
  ValueId bind_param(const std::string& onnx_name, Tensor t);
  std::map<std::string, Tensor>& bound() { return bound_; }
  // Records that `onnx_name` is a graph input (for NeedsKnownInput).
  void mark_graph_input(const std::string& onnx_name) { graph_inputs_.insert(onnx_name); }

  // The IR wants every parameter before the first op, but a known tensor may
  // first be used as data after ops exist. Such "late" tensors get a
  // placeholder constant and are listed here; the importer then runs again
  // with them declared up front (`predeclare`), bound once they are known.
  struct Late {
    std::string onnx_name;
    DType dtype;
    Shape shape;
  };
  const std::vector<Late>& late() const { return late_; }
  void predeclare(const std::vector<Late>& late);

  // An ONNX name made a Graph IR identifier: every character outside
  // [A-Za-z0-9_] becomes '_', and a leading digit gets "v_".
  static std::string sanitize(const std::string& onnx_name);

  // Attributes.
  static const ::onnx::AttributeProto* attr(const ::onnx::NodeProto& n, const std::string& name);
  static int64_t int_attr(const ::onnx::NodeProto& n, const std::string& name, int64_t fallback);
  static double float_attr(const ::onnx::NodeProto& n, const std::string& name, double fallback);
  static std::string string_attr(const ::onnx::NodeProto& n, const std::string& name, const std::string& fallback);
  static std::optional<std::vector<int64_t>> ints_attr(const ::onnx::NodeProto& n, const std::string& name);

  // UserError unless lo <= inputs <= hi.
  static void require_inputs(const ::onnx::NodeProto& n, int lo, int hi);
  // An axis in [-rank, rank) made non-negative; UserError otherwise.
  static int64_t normalize_axis(int64_t axis, int64_t rank);

 private:
  std::string fresh(const std::string& onnx_name);

  std::string path_;
  int64_t opset_;
  GraphBuilder b_;
  std::unordered_map<std::string, ValueId> values_;
  std::unordered_map<std::string, Tensor> known_;
  std::unordered_map<std::string, ShapeValue> shape_values_;
  std::map<std::string, Tensor> bound_;
  std::vector<Late> late_;
  std::set<std::string> graph_inputs_;
  std::unordered_map<std::string, ValueId> predeclared_;
};

// Converts one node. Converters are grouped by kind in ops_*.cpp, and each
// group registers itself in the table the importer dispatches on.
using Converter = std::function<void(ImportContext&, const ::onnx::NodeProto&)>;
using ConverterTable = std::unordered_map<std::string, Converter>;

void register_elementwise_ops(ConverterTable& table);
void register_reduce_ops(ConverterTable& table);
void register_shape_ops(ConverterTable& table);
void register_nn_ops(ConverterTable& table);
void register_index_ops(ConverterTable& table);
void register_einsum_op(ConverterTable& table);
void register_cnn_ops(ConverterTable& table);

// The converters of every supported op type, by ONNX op_type.
const ConverterTable& converters();

// The Stitch dtype of an ONNX element type, if Stitch has one; the type's name.
std::optional<DType> dtype_of_onnx(int32_t elem_type);
std::string elem_type_name(int32_t elem_type);

// A Tensor from a TensorProto (raw_data or the typed fields); UserError for
// an unsupported element type, external data, or a size mismatch.
Tensor tensor_from_proto(const ::onnx::TensorProto& p);

}  // namespace stitch::onnx_import
