// The interpreter's value representation: every element held wide (floats as
// double, integers and bools as int64) so each op computes in one exact-enough
// type and rounds once to its dtype (docs/semantics.md, "Rounding").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interp/rounding.h"
#include "stitch/dtype.h"
#include "stitch/shape.h"
#include "stitch/tensor.h"

namespace stitch::interp {

class BufferPool;

class WideBuffer {
 public:
  WideBuffer() = default;
  // Contents unspecified: every evaluator writes each element of its result.
  // Storage comes from `pool` when it holds a freed buffer of the same size.
  // Throws UserError (naming `what`) when the host cannot hold it.
  WideBuffer(DType dtype, std::vector<int64_t> shape, const std::string& what = "value",
             BufferPool* pool = nullptr);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  bool holds_floats() const { return is_float(dtype_); }

  double* floats() { return floats_.get(); }
  const double* floats() const { return floats_.get(); }
  int64_t* ints() { return ints_.get(); }
  const int64_t* ints() const { return ints_.get(); }

  // Storage as T, where T is double for float dtypes and int64_t otherwise.
  template <class T> T* data();
  template <class T> const T* data() const;

 private:
  friend class BufferPool;

  DType dtype_ = DType::f32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::unique_ptr<double[]> floats_;
  std::unique_ptr<int64_t[]> ints_;
};

template <> inline double* WideBuffer::data<double>() { return floats(); }
template <> inline const double* WideBuffer::data<double>() const { return floats(); }
template <> inline int64_t* WideBuffer::data<int64_t>() { return ints(); }
template <> inline const int64_t* WideBuffer::data<int64_t>() const { return ints(); }

// Storage of values freed during one interpret() call, handed to later values
// of the same element count: on large workloads, faulting in fresh pages for
// every intermediate took a third of the run time.
class BufferPool {
 public:
  void recycle(WideBuffer&& b);
  std::unique_ptr<double[]> take_floats(int64_t numel);  // nullptr when none fits
  std::unique_ptr<int64_t[]> take_ints(int64_t numel);

 private:
  // A handful is enough: values die about as fast as new ones are made.
  static constexpr size_t kMaxKept = 4;
  std::vector<std::pair<int64_t, std::unique_ptr<double[]>>> floats_;
  std::vector<std::pair<int64_t, std::unique_ptr<int64_t[]>>> ints_;
};

// Calls body.template operator()<T>() with T the storage type of `dtype`, so
// type-agnostic code (layout ops) is written once.
template <class Body>
decltype(auto) with_storage_type(DType dtype, Body&& body) {
  if (is_float(dtype)) return body.template operator()<double>();
  return body.template operator()<int64_t>();
}

WideBuffer widen(const Tensor& t, const std::string& what, BufferPool* pool = nullptr);
Tensor narrow(const WideBuffer& b);

// Rounds every element to the buffer's dtype; a no-op on already rounded values.
void round_to_dtype(WideBuffer& b);

// Row-major strides, in elements, of a dense array of `shape`.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

}  // namespace stitch::interp
