// Shapes: a dim is a static extent or a symbol bound at run time (DESIGN.md, Graph IR).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "stitch/dtype.h"

namespace stitch {

class Dim {
 public:
  Dim(int64_t extent = 0) : extent_(extent) {}  // NOLINT: implicit from an integer on purpose
  static Dim symbol(std::string name) {
    Dim d;
    d.symbol_ = std::move(name);
    d.extent_ = -1;
    return d;
  }

  bool is_static() const { return symbol_.empty(); }
  bool is_symbolic() const { return !symbol_.empty(); }
  int64_t extent() const;  // requires is_static()
  const std::string& name() const { return symbol_; }

  bool operator==(const Dim& o) const { return extent_ == o.extent_ && symbol_ == o.symbol_; }
  bool operator!=(const Dim& o) const { return !(*this == o); }
  std::string str() const;

 private:
  int64_t extent_;
  std::string symbol_;
};

using Shape = std::vector<Dim>;

std::string shape_str(const Shape& s);  // "[B, 1024]"
bool is_static(const Shape& s);

// Symbol name -> extent, as bound from the shapes of actual inputs.
using SymbolBindings = std::map<std::string, int64_t>;

// Substitutes every symbol; throws UserError naming the symbol if unbound.
std::vector<int64_t> concrete_shape(const Shape& s, const SymbolBindings& b);
int64_t element_count(const std::vector<int64_t>& shape);

// The largest tensor Stitch accepts: 2^48 bytes (256 TiB), more than any host
// or GPU addresses today, and 2^15 times below int64's range, so that a byte
// offset, an extent times an element size, or the sum of a few such values
// never overflows (docs/limits.md).
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 48;

// The bytes a tensor of `dtype` and `shape` spans, each zero extent counted as
// 1 (strides multiply the other extents even when a tensor is empty); nullopt
// when that passes kMaxTensorBytes. Every extent must be non-negative.
std::optional<int64_t> tensor_span_bytes(DType dtype, const std::vector<int64_t>& shape);
// Throws UserError when tensor_span_bytes is nullopt, naming `what`, the type,
// its element and byte counts and the limit.
void check_tensor_size(const std::string& what, DType dtype, const std::vector<int64_t>& shape);
// A symbol's or a range's extent: 0 to kMaxTensorBytes.
void check_extent(const std::string& what, int64_t extent);

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
  std::string str() const;  // "f32[B, 1024]"
};

// The same on the static dims of `t`, each symbol counted as 1: what can be
// checked when a graph is built; the rest is checked when symbols are bound.
void check_static_size(const std::string& what, const TensorType& t);
// Every value of `t` with its symbols from `b` (unbound ones counted as 1).
void check_bound_size(const std::string& what, const TensorType& t, const SymbolBindings& b);

}  // namespace stitch
