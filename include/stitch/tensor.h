// A dense host tensor: dtype, concrete shape, C-order bytes. The currency of
// the interpreter, the CLI and the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <new>
#include <utility>
#include <vector>

#include "stitch/dtype.h"

namespace stitch {

// IEEE binary16 and bfloat16 conversions, round to nearest even; NaN stays NaN.
uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float f);
float bf16_bits_to_f32(uint16_t h);
// Direct from double (no double rounding through f32).
uint16_t f64_to_f16_bits(double d);
uint16_t f64_to_bf16_bits(double d);

namespace detail {
// Tensor storage (docs/executable.md, Buffer planning) starts on a 64-byte
// cache line, so that kernels' vector accesses and streaming stores
// (docs/cpu-backend.md) line up with lines. Storage of kLargeStorageBytes or
// more is mapped on its own, 2 MiB aligned, and advised for transparent huge
// pages unless STITCH_HUGE_PAGES=0; freed mappings up to 32 MiB are kept for
// the next allocation of their size (docs/executable.md, Tensor storage).
inline constexpr size_t kLargeStorageBytes = size_t{4} << 20;
void* allocate_storage(size_t bytes);
void free_storage(void* p, size_t bytes) noexcept;
// Whether `p` is the storage this thread last got from a new mapping (which
// the kernel zeroed), not a kept one or the C++ heap's.
bool storage_is_zeroed(const void* p);
// Whether storage of kLargeStorageBytes or more is advised for huge pages:
// STITCH_HUGE_PAGES, read once; a value other than 0 or 1 is a UserError.
bool huge_pages_enabled();

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(allocate_storage(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { free_storage(p, n * sizeof(T)); }
  // resize() default-initialises: bytes stay unwritten until the Tensor
  // constructor zero-fills them (Tensor::uninitialized leaves them).
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  friend bool operator==(const CacheLineAllocator&, const CacheLineAllocator&) { return true; }
};
}  // namespace detail

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, std::vector<int64_t> shape);  // zero-filled
  // Storage whose contents are unspecified until written: for outputs a
  // kernel writes in full, so that no thread first touches and zeroes them
  // serially (docs/executable.md).
  static Tensor uninitialized(DType dtype, std::vector<int64_t> shape);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return bytes_.size(); }

  std::byte* raw() { return bytes_.data(); }
  const std::byte* raw() const { return bytes_.data(); }
  template <class T> T* data() { return reinterpret_cast<T*>(bytes_.data()); }
  template <class T> const T* data() const { return reinterpret_cast<const T*>(bytes_.data()); }

  // Element access through a wide type, for tests and the interpreter's edges.
  // get_f64 converts any dtype exactly to double (i64 beyond 2^53 rounds);
  // set_f64 rounds to the dtype (floats: nearest even; ints: truncate toward
  // zero, saturate, NaN -> 0; bool: nonzero -> true).
  double get_f64(int64_t i) const;
  void set_f64(int64_t i, double v);
  // Exact for integer and bool dtypes; floats truncate, saturate, NaN -> 0.
  int64_t get_i64(int64_t i) const;
  // Integer dtypes wrap (two's complement); bool: nonzero -> true; floats
  // round once to nearest even, even above 2^53.
  void set_i64(int64_t i, int64_t v);

  std::string str(int max_elements = 16) const;  // "f32[2, 3] {1, 2, ...}"

 private:
  DType dtype_ = DType::f32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  struct NoFill {};
  Tensor(DType dtype, std::vector<int64_t> shape, NoFill);
  // Element i's bytes, checked (get_f64, set_f64, get_i64, set_i64).
  std::byte* element(int64_t i) const;

  std::vector<std::byte, detail::CacheLineAllocator<std::byte>> bytes_;
};

// A zero-filled tensor for `what`, which messages name ("input 'x'"). A shape
// over kMaxTensorBytes, or memory the host will not give (the Tensor
// constructors' std::bad_alloc or failed mapping), is a UserError naming
// `what` and the bytes asked for (docs/limits.md).
Tensor allocate_tensor(const std::string& what, DType dtype, std::vector<int64_t> shape);

// One element of `dtype` at `p`, through a wide type, with the conversions of
// Tensor::get_f64 / set_f64 / get_i64 / set_i64 (which call these).
double element_get_f64(const std::byte* p, DType dtype);
void element_set_f64(std::byte* p, DType dtype, double v);
int64_t element_get_i64(const std::byte* p, DType dtype);
void element_set_i64(std::byte* p, DType dtype, int64_t v);

// A dense row-major array in memory that something else owns: a whole tensor,
// or a region of one (a lazy array's view, docs/lazy.md). Non-owning: the data
// and the shape must outlive it.
struct ArrayView {
  std::byte* data = nullptr;
  DType dtype = DType::f32;
  const int64_t* shape = nullptr;
  int rank = 0;

  static ArrayView of(Tensor& t) { return {t.raw(), t.dtype(), t.shape().data(), t.rank()}; }
  int64_t numel() const;
  size_t nbytes() const;
};

// Fills with values drawn from a seeded generator (splitmix64): floats uniform
// on a grid of the dtype's precision in [-2, 2), integers in [-8, 8) (i8 too),
// bools 50/50. Same seed, same tensor on every machine and compiler.
void fill_random(Tensor& t, uint64_t seed);

}  // namespace stitch
