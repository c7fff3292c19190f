// The checked way to build a Graph: every op is validated (arity, dtypes,
// attributes, shapes) as it is added, composites are expanded to primitives,
// and attributes are stored normalised (defaults filled, axes non-negative).
// Errors are UserErrors; the text parser adds the source location.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "stitch/graph.h"

namespace stitch {

// An op argument: a value of the graph, or a numeric literal that takes the
// dtype of the op's other operands (DESIGN.md, Graph text format).
struct Operand {
  ValueId value;
  bool is_literal = false;
  AttrValue literal;  // int or float when is_literal

  Operand(ValueId v) : value(v) {}  // NOLINT: implicit
  Operand(double x) : is_literal(true), literal(x) {}  // NOLINT
  Operand(int64_t x) : is_literal(true), literal(x) {}  // NOLINT
  Operand(int x) : is_literal(true), literal(int64_t{x}) {}  // NOLINT
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name = "main");

  // Names the caller will define later; generated names avoid them.
  void reserve_name(const std::string& name) { reserved_.insert(name); }
  // Source location stamped on the nodes added from now on.
  void set_loc(SourceLoc loc) { loc_ = std::move(loc); }

  ValueId param(const std::string& name, DType dtype, Shape shape);

  // Any primitive or composite op by its text name. `name` names the result
  // (generated when empty); intermediates of a composite get derived names.
  ValueId op(std::string_view op_name, std::vector<Operand> args, Attrs attrs = {},
             const std::string& name = "");
  ValueId op(OpKind kind, std::vector<Operand> args, Attrs attrs = {}, const std::string& name = "");
  static bool is_known_op(std::string_view op_name);
  static bool is_composite(std::string_view op_name);

  // Convenience for C++ callers.
  ValueId constant(double value, DType dtype, Shape shape = {}, const std::string& name = "");
  ValueId unary(OpKind kind, ValueId x, const std::string& name = "") { return op(kind, {x}, {}, name); }
  ValueId binary(OpKind kind, Operand a, Operand b, const std::string& name = "") {
    return op(kind, {a, b}, {}, name);
  }
  ValueId add(Operand a, Operand b, const std::string& name = "") { return binary(OpKind::Add, a, b, name); }
  ValueId sub(Operand a, Operand b, const std::string& name = "") { return binary(OpKind::Sub, a, b, name); }
  ValueId mul(Operand a, Operand b, const std::string& name = "") { return binary(OpKind::Mul, a, b, name); }
  ValueId div(Operand a, Operand b, const std::string& name = "") { return binary(OpKind::Div, a, b, name); }
  ValueId max(Operand a, Operand b, const std::string& name = "") { return binary(OpKind::Max, a, b, name); }
  ValueId exp(ValueId x, const std::string& name = "") { return unary(OpKind::Exp, x, name); }
  ValueId cast(ValueId x, DType to, const std::string& name = "");
  ValueId reduce(OpKind kind, ValueId x, std::vector<int64_t> axes, bool keepdims = false,
                 const std::string& name = "");
  ValueId reshape(ValueId x, Shape shape, const std::string& name = "");
  ValueId broadcast(ValueId x, Shape shape, const std::string& name = "");
  ValueId transpose(ValueId x, std::vector<int64_t> perm, const std::string& name = "");

  void output(ValueId v, const std::string& name = "");  // name defaults to the value's

  const Graph& graph() const { return g_; }
  Graph& mutable_graph() { return g_; }
  // Checks the graph (verifier) and hands it over; the builder is spent.
  Graph finish();

  // Used by composite expansion: a fresh name derived from `hint`.
  std::string fresh_name(const std::string& hint) const;

 private:
  ValueId add_primitive(OpKind kind, std::vector<ValueId> inputs, Attrs attrs, const std::string& name);
  std::vector<ValueId> materialize_literals(OpKind kind, const std::vector<Operand>& args);

  Graph g_;
  std::unordered_set<std::string> reserved_;
  // Per hint, the smallest suffix not yet known to be taken, so n generated
  // names cost O(n), not O(n^2) (a file of 20k literals took 20 s). A name
  // freed later is merely skipped; uniqueness is still checked.
  mutable std::unordered_map<std::string, int> next_suffix_;
  SourceLoc loc_;
};

}  // namespace stitch
