// Shapes: a dim is a static extent or a symbol bound at run time (DESIGN.md, Graph IR).
#pragma once

#include <cstdint>
#include <map>
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

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;

  int rank() const { return static_cast<int>(shape.size()); }
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
  std::string str() const;  // "f32[B, 1024]"
};

}  // namespace stitch
