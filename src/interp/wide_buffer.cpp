#include "interp/wide_buffer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <limits>
#include <new>

#include "stitch/error.h"

namespace stitch::interp {

namespace {

std::string describe(DType dtype, const std::vector<int64_t>& shape) {
  return fmt::format("{}[{}]", dtype_name(dtype), fmt::join(shape, ", "));
}

template <class Wide, class Narrow, class Convert>
void widen_each(const Tensor& t, Wide* out, Convert convert) {
  const Narrow* in = t.data<Narrow>();
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = convert(in[i]);
}

template <class Wide, class Narrow, class Convert>
void narrow_each(const Wide* in, Tensor& t, Convert convert) {
  Narrow* out = t.data<Narrow>();
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = convert(in[i]);
}

template <class T>
std::unique_ptr<T[]> take_from(std::vector<std::pair<int64_t, std::unique_ptr<T[]>>>& kept, int64_t numel) {
  for (auto it = kept.begin(); it != kept.end(); ++it) {
    if (it->first != numel) continue;
    std::unique_ptr<T[]> storage = std::move(it->second);
    kept.erase(it);
    return storage;
  }
  return nullptr;
}

template <class T>
void keep(std::vector<std::pair<int64_t, std::unique_ptr<T[]>>>& kept, int64_t numel, std::unique_ptr<T[]> storage,
          size_t max_kept) {
  if (!storage) return;
  kept.emplace_back(numel, std::move(storage));
  if (kept.size() > max_kept) kept.erase(kept.begin());
}

}  // namespace

WideBuffer::WideBuffer(DType dtype, std::vector<int64_t> shape, const std::string& what, BufferPool* pool)
    : dtype_(dtype), shape_(std::move(shape)), numel_(element_count(shape_)) {
  constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 8;
  std::string failure;
  if (numel_ > kMaxElements) {
    failure = "it is larger than the address space";
  } else {
    try {
      const size_t n = static_cast<size_t>(numel_);
      if (is_float(dtype_)) {
        if (pool) floats_ = pool->take_floats(numel_);
        if (!floats_) floats_ = std::make_unique_for_overwrite<double[]>(n);
      } else {
        if (pool) ints_ = pool->take_ints(numel_);
        if (!ints_) ints_ = std::make_unique_for_overwrite<int64_t[]>(n);
      }
      return;
    } catch (const std::bad_alloc&) {
      failure = "the host is out of memory";
    }
  }
  throw UserError(fmt::format("interpreter: cannot hold {} '{}' ({} elements of 8 bytes): {}",
                              describe(dtype_, shape_), what, numel_, failure));
}

void BufferPool::recycle(WideBuffer&& b) {
  keep(floats_, b.numel_, std::move(b.floats_), kMaxKept);
  keep(ints_, b.numel_, std::move(b.ints_), kMaxKept);
}

std::unique_ptr<double[]> BufferPool::take_floats(int64_t numel) { return take_from(floats_, numel); }
std::unique_ptr<int64_t[]> BufferPool::take_ints(int64_t numel) { return take_from(ints_, numel); }

WideBuffer widen(const Tensor& t, const std::string& what, BufferPool* pool) {
  WideBuffer b(t.dtype(), t.shape(), what, pool);
  switch (t.dtype()) {
    case DType::f16: widen_each<double, uint16_t>(t, b.floats(), f16_bits_to_f32); break;
    case DType::bf16: widen_each<double, uint16_t>(t, b.floats(), bf16_bits_to_f32); break;
    case DType::f32: widen_each<double, float>(t, b.floats(), [](float v) { return double{v}; }); break;
    case DType::f64: widen_each<double, double>(t, b.floats(), [](double v) { return v; }); break;
    case DType::i8: widen_each<int64_t, int8_t>(t, b.ints(), [](int8_t v) { return int64_t{v}; }); break;
    case DType::i32: widen_each<int64_t, int32_t>(t, b.ints(), [](int32_t v) { return int64_t{v}; }); break;
    case DType::i64: widen_each<int64_t, int64_t>(t, b.ints(), [](int64_t v) { return v; }); break;
    case DType::boolean:
      widen_each<int64_t, uint8_t>(t, b.ints(), [](uint8_t v) { return int64_t{v != 0}; });
      break;
  }
  return b;
}

Tensor narrow(const WideBuffer& b) {
  Tensor t(b.dtype(), b.shape());
  switch (b.dtype()) {
    case DType::f16: narrow_each<double, uint16_t>(b.floats(), t, f64_to_f16_bits); break;
    case DType::bf16: narrow_each<double, uint16_t>(b.floats(), t, f64_to_bf16_bits); break;
    case DType::f32: narrow_each<double, float>(b.floats(), t, [](double v) { return static_cast<float>(v); }); break;
    case DType::f64: narrow_each<double, double>(b.floats(), t, [](double v) { return v; }); break;
    case DType::i8: narrow_each<int64_t, int8_t>(b.ints(), t, [](int64_t v) { return static_cast<int8_t>(v); }); break;
    case DType::i32:
      narrow_each<int64_t, int32_t>(b.ints(), t, [](int64_t v) { return static_cast<int32_t>(v); });
      break;
    case DType::i64: narrow_each<int64_t, int64_t>(b.ints(), t, [](int64_t v) { return v; }); break;
    case DType::boolean:
      narrow_each<int64_t, uint8_t>(b.ints(), t, [](int64_t v) { return static_cast<uint8_t>(v != 0); });
      break;
  }
  return t;
}

void round_to_dtype(WideBuffer& b) {
  with_storage_type(b.dtype(), [&]<class T>() {
    with_rounding<T>(b.dtype(), [&](auto round) {
      T* v = b.data<T>();
      for (int64_t i = 0; i < b.numel(); ++i) v[i] = round(v[i]);
    });
  });
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

}  // namespace stitch::interp
