// Kernel IR expressions: immutable scalar trees shared by both back ends
// (docs/kernel-ir.md). Math reuses the Graph IR's OpKind list, so an
// elementwise op added to ops.def is one more case here, not a second list.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stitch/dtype.h"
#include "stitch/ops.h"

namespace stitch::kir {

enum class ExprKind : uint8_t {
  Const,  // a literal of any dtype
  Var,    // a scalar parameter, loop variable, local or reduction result, by name
  Op,     // an elementwise OpKind (cast included) applied to its operands
  Load,   // buffer[indices...]: one i64 index per dimension of the buffer
};

struct ExprNode;

// A shared handle to an immutable node; a default-constructed Expr is "absent"
// (an uninitialised local, a reduction without an index operand).
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const ExprNode& node() const;
  const ExprNode* operator->() const { return &node(); }
  DType dtype() const;

 private:
  std::shared_ptr<const ExprNode> node_;
};

struct ExprNode {
  ExprKind kind;
  DType dtype;
  int64_t int_value = 0;      // Const of an integer or bool dtype
  double float_value = 0.0;   // Const of a float dtype
  std::string name;           // Var: the name; Load: the buffer
  OpKind op = OpKind::Add;    // Op only
  std::vector<Expr> operands; // Op: its operands; Load: the indices
  // A cast from a float to an integer whose operand is known finite and inside
  // the target's range (cast_in_range): a plain truncation, no saturation.
  bool in_range = false;
};

// Structural equality (same tree, same dtypes, same constants); the verifier
// uses it to match a grid loop's extent with the launch grid.
bool operator==(const Expr& a, const Expr& b);
inline bool operator!=(const Expr& a, const Expr& b) { return !(a == b); }

// The literal value when `e` is an integer constant.
bool is_int_constant(const Expr& e, int64_t* value = nullptr);

// Whether `e` reads a buffer anywhere (false for an absent Expr).
bool has_load(const Expr& e);

// Literals. An integer literal is i64 unless told otherwise: index arithmetic is i64.
Expr int_const(int64_t value, DType dtype = DType::i64);
Expr float_const(double value, DType dtype);
Expr bool_const(bool value);
Expr var(std::string name, DType dtype = DType::i64);
Expr load(std::string buffer, DType dtype, std::vector<Expr> indices);

// An elementwise op whose result dtype follows the Graph IR's typing rule for
// `kind` (type_inference.h); a combination that rule rejects is a bug in the
// caller and raises InternalError.
Expr op(OpKind kind, std::vector<Expr> operands);
Expr cast(Expr value, DType to);
// A float -> integer cast whose operand the caller has proved finite and
// strictly inside the target's range (lower/value_range.h): the same value as
// cast(), emitted as a plain conversion that vectorises where the saturating
// one's branches keep GCC's loop scalar.
Expr cast_in_range(Expr value, DType to);
// `e` (an Op or a Load) with other operands, everything else kept.
Expr with_operands(const Expr& e, std::vector<Expr> operands);
// No typing check: for the verifier's tests, which must build ill-typed trees.
Expr make_op_unchecked(OpKind kind, DType result, std::vector<Expr> operands);

// The result dtype of `kind` on operands of `operand_dtypes` under the Graph IR
// rule; on a violation returns false and sets `problem` to the rule's message.
bool infer_op_dtype(OpKind kind, const std::vector<DType>& operand_dtypes, DType cast_to,
                    DType* result, std::string* problem);

// Index arithmetic reads best infix in builders and tests. An int64_t operand
// becomes a literal of the other operand's dtype.
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator+(Expr a, int64_t b);
Expr operator-(Expr a, int64_t b);
Expr operator*(Expr a, int64_t b);
Expr operator/(Expr a, int64_t b);
Expr operator%(Expr a, int64_t b);
Expr operator*(int64_t a, Expr b);

}  // namespace stitch::kir
