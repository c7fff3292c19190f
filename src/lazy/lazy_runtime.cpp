// The public face of lazy arrays (include/stitch/lazy.h) over the trace.
#include <fmt/format.h>

#include "lazy/trace.h"
#include "stitch/lazy.h"

namespace stitch {

DType Array::dtype() const {
  STITCH_ASSERT(state_ != nullptr, "Array::dtype on an empty array");
  return state_->data.dtype();
}

const std::vector<int64_t>& Array::shape() const {
  STITCH_ASSERT(state_ != nullptr, "Array::shape on an empty array");
  return state_->data.shape();
}

Tensor Array::to_host() const {
  if (state_ == nullptr) throw UserError("to_host on an empty Array");
  if (std::shared_ptr<lazy::Trace> trace = state_->trace.lock()) trace->flush_for(*state_);
  return state_->data;
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
