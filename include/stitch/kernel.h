// User-defined kernels (docs/kernel-language.md): data-parallel bodies run once
// per index of a range (parallel_for), or accumulating into a sum, max or min
// (parallel_reduce). The text form lives in .stitch files beside graphs; the
// UserKernelBuilder below builds the same tree from C++. Both end in
// check_kernel(), which resolves names, types every expression and records how
// each array is accessed, so a UserKernel that exists has been checked.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stitch/dtype.h"
#include "stitch/error.h"
#include "stitch/ops.h"
#include "stitch/shape.h"

namespace stitch {

enum class KernelExprKind : uint8_t {
  Literal,  // a number or bool; untyped until the checker gives it a dtype
  Name,     // an index variable, scalar parameter, shape symbol, loop variable or local
  Load,     // array[index, ...]
  Op,       // an elementwise op of ops.def (cast included) on its operands
};

struct KernelExprNode;

// A shared handle to an immutable expression node. The operators build
// untyped trees; check_kernel() gives every node its dtype.
class KExpr {
 public:
  KExpr() = default;
  explicit KExpr(std::shared_ptr<const KernelExprNode> node) : node_(std::move(node)) {}
  KExpr(int64_t v);  // NOLINT: implicit, so `x + 1` reads naturally
  KExpr(int v);      // NOLINT
  KExpr(double v);   // NOLINT

  bool defined() const { return node_ != nullptr; }
  const KernelExprNode& node() const;
  const KernelExprNode* operator->() const { return &node(); }

 private:
  std::shared_ptr<const KernelExprNode> node_;
};

struct KernelExprNode {
  KernelExprKind kind = KernelExprKind::Literal;
  DType dtype = DType::i64;  // set by check_kernel(); for a literal, its dtype once given
  bool typed = false;        // whether dtype is meaningful (check_kernel() sets it)
  // Literal: the value as written. An integer literal keeps both forms so it can
  // become a float; `is_float_literal` says which one was written.
  int64_t int_value = 0;
  double float_value = 0.0;
  bool is_float_literal = false;
  bool is_bool_literal = false;
  std::string name;        // Name: the name; Load: the array
  OpKind op = OpKind::Add; // Op only
  DType cast_to = DType::f32;  // Op == Cast: the target
  std::vector<KExpr> operands; // Op: operands; Load: indices
  SourceLoc loc;
};

KExpr kernel_literal(int64_t v, SourceLoc loc = {});
KExpr kernel_literal(double v, SourceLoc loc = {});
KExpr kernel_bool(bool v, SourceLoc loc = {});
KExpr kernel_name(std::string name, SourceLoc loc = {});
KExpr kernel_load(std::string array, std::vector<KExpr> index, SourceLoc loc = {});
KExpr kernel_op(OpKind op, std::vector<KExpr> operands, SourceLoc loc = {});
KExpr kernel_cast(KExpr value, DType to, SourceLoc loc = {});

KExpr operator+(KExpr a, KExpr b);
KExpr operator-(KExpr a, KExpr b);
KExpr operator*(KExpr a, KExpr b);
KExpr operator/(KExpr a, KExpr b);
KExpr operator%(KExpr a, KExpr b);
KExpr operator-(KExpr a);
KExpr operator<(KExpr a, KExpr b);
KExpr operator<=(KExpr a, KExpr b);
KExpr operator>(KExpr a, KExpr b);
KExpr operator>=(KExpr a, KExpr b);
KExpr operator&&(KExpr a, KExpr b);
KExpr operator||(KExpr a, KExpr b);
KExpr operator!(KExpr a);
// == and != would read as comparisons of handles; spell them out.
KExpr eq(KExpr a, KExpr b);
KExpr ne(KExpr a, KExpr b);

enum class KernelStmtKind : uint8_t {
  Let,     // let name[: dtype] = value
  Assign,  // name = value (a local)
  Store,   // array[index, ...] = value
  If,      // if cond { body } else { else_body }
  For,     // for name < extent { body }: serial, name = 0 .. extent-1
  Yield,   // yield value: combine value into a reduction kernel's result
};

struct KStmt {
  KernelStmtKind kind = KernelStmtKind::Let;
  std::string name;       // Let, Assign: the local; Store: the array; For: the loop variable
  bool has_declared_type = false;
  DType declared_type = DType::f32;  // Let with a written type; set by the checker otherwise
  std::vector<KExpr> index;          // Store
  KExpr value;                       // Let, Assign, Store, Yield: the value; If: the condition; For: the extent
  std::vector<KStmt> body;           // If: then; For: the loop body
  std::vector<KStmt> else_body;      // If
  SourceLoc loc;
};

// How a kernel touches one array parameter, derived by check_kernel().
enum class ArrayAccess : uint8_t { None, Read, Write, ReadWrite };
std::string_view array_access_name(ArrayAccess a);

struct KernelParam {
  std::string name;
  DType dtype = DType::f32;
  bool is_array = false;
  Shape shape;  // arrays only: static extents or symbols bound from the argument
  ArrayAccess access = ArrayAccess::None;  // arrays only; set by check_kernel()
  SourceLoc loc;
};

struct KernelIndex {
  std::string name;  // i64, 0 .. extent-1
  KExpr extent;      // over scalar integer parameters, shape symbols and literals
  SourceLoc loc;
};

enum class KernelReduction : uint8_t { None, Sum, Max, Min };
std::string_view kernel_reduction_name(KernelReduction r);

struct UserKernel {
  std::string name;
  std::vector<KernelParam> params;
  std::vector<KernelIndex> range;  // one index per dimension, outermost first
  KernelReduction reduction = KernelReduction::None;
  DType result_dtype = DType::f32;  // reductions only
  std::vector<KStmt> body;
  SourceLoc loc;

  const KernelParam* find_param(const std::string& name) const;
  // The shape symbols of the array parameters, in first-use order.
  std::vector<std::string> symbols() const;
  bool is_reduction() const { return reduction != KernelReduction::None; }
};

// Resolves every name, types every expression (literals take the dtype of the
// other operand, as in graphs), checks statements and fills each array's
// access. Throws UserError at the offending node's location.
void check_kernel(UserKernel& kernel);

// The text form; parsing it gives an equal kernel.
std::string print_kernel(const UserKernel& kernel);

// Structural equality of checked kernels (names, types, bodies); locations ignored.
bool same_kernel(const UserKernel& a, const UserKernel& b);

// Whether `pred` holds for `e` or any node under it.
bool any_node(const KExpr& e, const std::function<bool(const KernelExprNode&)>& pred);
// Whether `pred` holds for a statement of `body` or any statement nested in one.
bool any_stmt(const std::vector<KStmt>& body, const std::function<bool(const KStmt&)>& pred);

// Builds a kernel from C++ (docs/kernel-language.md, C++ builder):
//
//   UserKernelBuilder k("saxpy");
//   KExpr a = k.scalar("a", DType::f32);
//   k.array("x", DType::f32, {Dim::symbol("n")});
//   k.array("y", DType::f32, {Dim::symbol("n")});
//   KExpr i = k.index("i", k.symbol("n"));
//   k.store("y", {i}, a * k.load("x", {i}) + k.load("y", {i}));
//   UserKernel saxpy = k.finish();
class UserKernelBuilder {
 public:
  explicit UserKernelBuilder(std::string name);

  KExpr scalar(const std::string& name, DType dtype);
  void array(const std::string& name, DType dtype, Shape shape);
  KExpr symbol(const std::string& name) { return kernel_name(name); }
  // Adds a dimension to the range (outermost first) and returns its index.
  KExpr index(const std::string& name, KExpr extent);
  // Makes this a parallel_reduce kernel.
  void reduce(KernelReduction op, DType dtype);

  KExpr load(const std::string& array, std::vector<KExpr> index) const {
    return kernel_load(array, std::move(index));
  }
  KExpr let(const std::string& name, KExpr value);
  KExpr let(const std::string& name, DType dtype, KExpr value);
  void assign(const std::string& local, KExpr value);
  void store(const std::string& array, std::vector<KExpr> index, KExpr value);
  void if_(KExpr cond, const std::function<void()>& then_body, const std::function<void()>& else_body = {});
  void for_(const std::string& var, KExpr extent, const std::function<void(KExpr)>& body);
  void yield(KExpr value);

  // Checks the kernel (check_kernel) and hands it over; the builder is spent.
  UserKernel finish();

 private:
  std::vector<KStmt>& current() { return *blocks_.back(); }
  UserKernel kernel_;
  std::vector<std::vector<KStmt>*> blocks_;
};

}  // namespace stitch
