// The public face of lazy arrays (include/stitch/lazy.h) over the trace.
#include <fmt/format.h>

#include <cstring>

#include "lazy/trace.h"
#include "stitch/lazy.h"

namespace stitch {

DType Array::dtype() const {
  STITCH_ASSERT(state_ != nullptr, "Array::dtype on an empty array");
  return state_->storage->dtype();
}

const std::vector<int64_t>& Array::shape() const {
  STITCH_ASSERT(state_ != nullptr, "Array::shape on an empty array");
  return state_->shape;
}

Tensor Array::to_host() const {
  if (state_ == nullptr) throw UserError("to_host on an empty Array");
  if (std::shared_ptr<lazy::Trace> trace = state_->trace.lock()) trace->flush_for(*state_);
  Tensor out = Tensor::uninitialized(dtype(), state_->shape);
  const ArrayView v = state_->view();
  if (v.nbytes() > 0) std::memcpy(out.raw(), v.data, v.nbytes());
  return out;
}

namespace {

std::shared_ptr<lazy::Trace> trace_of(const std::shared_ptr<lazy::ArrayState>& s, const char* what) {
  if (s == nullptr) throw UserError(fmt::format("{} of an empty Array", what));
  std::shared_ptr<lazy::Trace> trace = s->trace.lock();
  if (!trace) throw UserError(fmt::format("{} of an array whose LazyRuntime was destroyed", what));
  return trace;
}

}  // namespace

Array Array::reshape(std::vector<int64_t> shape) const {
  std::shared_ptr<lazy::Trace> trace = trace_of(state_, "reshape");
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) throw UserError(fmt::format("reshape: negative extent {}", d));
    count *= d;
  }
  if (count != state_->view().numel()) {
    throw UserError(fmt::format("reshape: {} elements cannot be seen as {}", state_->view().numel(),
                                shape_str(Shape(shape.begin(), shape.end()))));
  }
  Array a;
  a.state_ = trace->new_view(*state_, 0, std::move(shape));
  return a;
}

Array Array::slice(int64_t begin, int64_t end) const {
  std::shared_ptr<lazy::Trace> trace = trace_of(state_, "slice");
  if (state_->shape.empty()) throw UserError("slice of a 0-d array");
  const int64_t rows = state_->shape[0];
  if (begin < 0 || end < begin || end > rows) {
    throw UserError(fmt::format("slice [{}, {}) is outside the {} rows of the array", begin, end, rows));
  }
  std::vector<int64_t> shape = state_->shape;
  shape[0] = end - begin;
  int64_t row = 1;
  for (size_t d = 1; d < state_->shape.size(); ++d) row *= state_->shape[d];
  Array a;
  a.state_ = trace->new_view(*state_, begin * row, std::move(shape));
  return a;
}

Tensor Scalar::value() const {
  if (state_ == nullptr) throw UserError("value() of an empty Scalar");
  if (!state_->ready) {
    std::shared_ptr<lazy::Trace> trace = state_->trace.lock();
    if (!trace) throw UserError("the value of a reduction whose LazyRuntime was destroyed before it ran");
    trace->flush_for(*state_);
  }
  STITCH_ASSERT(state_->ready, "a reduction's value is not ready after its flush");
  return state_->value;
}

double Scalar::to_double() const { return value().get_f64(0); }

LazyRuntime::LazyRuntime(LazyOptions options) : trace_(std::make_shared<lazy::Trace>(std::move(options))) {}

// Pending calls still run: a result the program never read may still be an
// array it reads later through another handle.
LazyRuntime::~LazyRuntime() {
  try {
    trace_->flush_all();
  } catch (const std::exception& e) {
    fmt::print(stderr, "stitch: error: pending lazy calls failed when their runtime was destroyed: {}\n", e.what());
  }
}

Array LazyRuntime::array(const Tensor& data) {
  Array a;
  a.state_ = trace_->new_array(data);
  return a;
}

Array LazyRuntime::zeros(DType dtype, std::vector<int64_t> shape) {
  for (int64_t d : shape) {
    if (d < 0) throw UserError(fmt::format("zeros: negative extent {}", d));
  }
  return array(Tensor(dtype, std::move(shape)));
}

void LazyRuntime::call(const KernelRef& kernel, const std::vector<LazyArg>& args) { trace_->record(kernel, args, nullptr); }

Scalar LazyRuntime::reduce(const KernelRef& kernel, const std::vector<LazyArg>& args) {
  Scalar s;
  s.state_ = std::make_shared<lazy::ScalarState>();
  s.state_->trace = trace_;
  trace_->record(kernel, args, s.state_);
  return s;
}

void LazyRuntime::flush() { trace_->flush_all(); }

const LazyStats& LazyRuntime::stats() const { return trace_->stats(); }

const LazyOptions& LazyRuntime::options() const { return trace_->options(); }

}  // namespace stitch
