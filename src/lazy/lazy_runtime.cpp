// The public face of lazy arrays (include/stitch/lazy.h) over the trace.
#include <fmt/format.h>

#include <cstring>
#include <optional>

#include "ir/canonicalize.h"
#include "ir/structural_key.h"
#include "lazy/trace.h"
#include "stitch/builder.h"
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
  const ArrayView v = state_->host_view(false);
  if (v.nbytes() > 0) std::memcpy(out.raw(), v.data, v.nbytes());
  return out;
}

void Array::assign(const Tensor& data) {
  if (state_ == nullptr) throw UserError("assign to an empty Array");
  if (data.dtype() != dtype() || data.shape() != state_->shape) {
    throw UserError(fmt::format("assign: the array is {}{}, the data {}{}", dtype_name(dtype()),
                                shape_str(Shape(state_->shape.begin(), state_->shape.end())), dtype_name(data.dtype()),
                                shape_str(Shape(data.shape().begin(), data.shape().end()))));
  }
  if (std::shared_ptr<lazy::Trace> trace = state_->trace.lock()) trace->flush_touching(*state_);
  const ArrayView v = state_->host_view(true);
  if (v.nbytes() > 0) std::memcpy(v.data, data.raw(), v.nbytes());
}

ArrayView Array::host_memory() {
  if (state_ == nullptr) throw UserError("host_memory of an empty Array");
  if (std::shared_ptr<lazy::Trace> trace = state_->trace.lock()) trace->flush_touching(*state_);
  return state_->host_view(true);
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
  if (count != state_->shape_only().numel()) {
    throw UserError(fmt::format("reshape: {} elements cannot be seen as {}", state_->shape_only().numel(),
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

LazyRuntime::LazyRuntime(std::shared_ptr<lazy::Trace> trace) : trace_(std::move(trace)) {}

std::unique_ptr<LazyRuntime> lazy::RuntimeFactory::make(LazyOptions options, std::unique_ptr<LazyBackend> backend) {
  options.backend = backend->kind();
  return std::unique_ptr<LazyRuntime>(new LazyRuntime(std::make_shared<Trace>(std::move(options), std::move(backend))));
}

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
  // Before the element count below, which could wrap (docs/limits.md).
  check_tensor_size("zeros", dtype, shape);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  Array a;
  if (shape.empty() || numel == 0) {
    a.state_ = trace_->new_array(Tensor(dtype, std::move(shape)));
    return a;
  }
  // The fill is recorded before the first call that may see it, and not at
  // all when that call overwrites the whole array first (Trace::zeros).
  a.state_ = trace_->new_deferred_array(dtype, std::move(shape));
  trace_->zeros(a.state_);
  return a;
}

void LazyRuntime::call(const KernelRef& kernel, const std::vector<LazyArg>& args) { trace_->record(kernel, args, nullptr); }

Scalar LazyRuntime::reduce(const KernelRef& kernel, const std::vector<LazyArg>& args) {
  Scalar s;
  s.state_ = std::make_shared<lazy::ScalarState>();
  s.state_->trace = trace_;
  trace_->record(kernel, args, s.state_);
  return s;
}

std::vector<Array> LazyRuntime::apply(const Graph& graph, const std::vector<Array>& inputs) {
  if (inputs.size() != graph.params().size()) {
    throw UserError(fmt::format("graph '{}' takes {} input{}, got {}", graph.name(), graph.params().size(),
                                graph.params().size() == 1 ? "" : "s", inputs.size()));
  }
  std::vector<std::shared_ptr<lazy::ArrayState>> states;
  for (const Array& a : inputs) {
    if (!a.valid()) throw UserError(fmt::format("graph '{}': an input is an empty Array", graph.name()));
    states.push_back(a.state_);
  }
  auto call = std::make_shared<lazy::GraphCall>();
  call->graph = canonicalize(graph);
  call->key = structural_key(call->graph);
  std::vector<Array> outputs;
  for (std::shared_ptr<lazy::ArrayState>& s : trace_->record_graph(std::move(call), states)) {
    Array a;
    a.state_ = std::move(s);
    outputs.push_back(std::move(a));
  }
  return outputs;
}

Array LazyRuntime::op(const std::string& name, const std::vector<LazyArg>& operands, const Attrs& attrs) {
  std::optional<OpKind> kind = parse_op_kind(name);
  if (!kind) throw UserError(fmt::format("unknown op '{}'", name));
  // Elementwise on arrays of one shape (numbers as scalars): a user kernel that fuses.
  const Array* first = nullptr;
  bool same_shape = true;
  for (const LazyArg& a : operands) {
    if (a.future.valid()) same_shape = false;  // a graph takes no futures either: refused below
    if (!a.array.valid()) continue;
    if (first == nullptr) first = &a.array;
    same_shape &= a.array.shape() == first->shape();
  }
  if (is_elementwise(*kind) && first != nullptr && same_shape &&
      static_cast<int>(operands.size()) == op_info(*kind).min_inputs) {
    std::vector<std::pair<bool, DType>> kinds;
    for (const LazyArg& a : operands) {
      if (a.array.valid()) {
        kinds.emplace_back(true, a.array.dtype());
      } else {
        // A number takes the dtype of the first array, as a literal in a graph does.
        kinds.emplace_back(false, first->dtype());
      }
    }
    DType result = DType::f32;
    KernelRef k = trace_->elementwise_kernel(*kind, kinds, static_cast<int>(first->shape().size()), attrs, &result);
    Array out = zeros(result, first->shape());
    std::vector<LazyArg> args = operands;
    args.emplace_back(out);
    call(k, args);
    return out;
  }
  // Anything else: a one-op graph over the array operands.
  GraphBuilder b(name);
  std::vector<Operand> graph_operands;
  std::vector<Array> inputs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const LazyArg& a = operands[i];
    if (a.future.valid()) throw UserError(fmt::format("op '{}': a reduction's value is not an operand of a graph op", name));
    if (a.array.valid()) {
      std::vector<Dim> shape(a.array.shape().begin(), a.array.shape().end());
      graph_operands.emplace_back(b.param(fmt::format("x{}", i), a.array.dtype(), shape));
      inputs.push_back(a.array);
    } else if (a.is_float) {
      graph_operands.emplace_back(a.float_value);
    } else {
      graph_operands.emplace_back(a.int_value);
    }
  }
  b.output(b.op(name, graph_operands, attrs, "y"));
  return apply(b.finish(), inputs).at(0);
}

void LazyRuntime::flush() { trace_->flush_all(); }

void LazyRuntime::set_mode(LazyOptions::Mode mode) {
  trace_->flush_all();
  trace_->set_mode(mode);
}

std::map<std::string, KernelRef> share_kernels(Module module) {
  std::map<std::string, KernelRef> out;
  for (UserKernel& k : module.kernels) {
    std::string name = k.name;
    out.emplace(std::move(name), std::make_shared<const UserKernel>(std::move(k)));
  }
  return out;
}

const LazyStats& LazyRuntime::stats() const { return trace_->stats(); }

const LazyOptions& LazyRuntime::options() const { return trace_->options(); }

}  // namespace stitch
