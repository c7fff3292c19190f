// The trace of lazy calls: see trace.h and docs/lazy.md.
#include "lazy/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>

#include "interp/index_bounds.h"
#include "ir/type_inference.h"
#include "lazy/cuda_lazy_backend.h"
#include "lazy/partition_plan.h"
#include "lazy/trace_scratch.h"
#include "lower/lower_user_kernel.h"
#include "options/options.h"
#include "pipeline/pipeline.h"
#include "stitch/interpreter.h"

namespace stitch::lazy {

using namespace trace_detail;

namespace {

// A hash of words (FNV-1a over each word), to compare bindings' inputs cheaply.
uint64_t hash_words(const std::vector<int64_t>& words) {
  uint64_t h = 1469598103934665603ULL;
  for (int64_t w : words) h = (h ^ static_cast<uint64_t>(w)) * 1099511628211ULL;
  return h;
}

// Attributes as text, for the elementwise kernels' cache key (cast's `to`).
std::string result_key(const Attrs& attrs) {
  std::string s;
  for (const auto& [name, value] : attrs.items()) s += name + "=" + value.str() + ";";
  return s;
}


std::string describe_call(const TraceCall& c) {
  if (c.graph) {
    std::string s = "graph " + c.graph->graph.name() + "(";
    for (size_t p = 0; p < c.args.size(); ++p) {
      s += fmt::format("{}{}array#{}", p ? ", " : "", writes(c.args[p].access) ? "out " : "", c.args[p].array->id);
    }
    return s + ")";
  }
  std::string s = c.kernel->name + "(";
  for (size_t p = 0; p < c.kernel->params.size(); ++p) {
    if (p) s += ", ";
    if (c.args[p].array) {
      s += fmt::format("array#{}", c.args[p].array->id);
    } else if (c.args[p].future) {
      s += "future";
    } else {
      s += c.args[p].scalar.is_float ? format_float(c.args[p].scalar.float_value) : std::to_string(c.args[p].scalar.int_value);
    }
  }
  return s + ")";
}

}  // namespace

Trace::Trace(LazyOptions options, std::unique_ptr<LazyBackend> backend)
    : options_(std::move(options)), backend_(std::move(backend)), scratch_(std::make_unique<Scratch>()) {
  if (!backend_) {
    backend_ = options_.backend == Backend::Cuda ? make_cuda_backend(options_.cache_dir) : make_cpu_backend(options_.cache_dir);
  }
  STITCH_ASSERT(backend_->kind() == options_.backend, "a lazy trace's back end is not the one its options name");
}

Trace::~Trace() = default;

std::shared_ptr<ArrayState> Trace::new_state(std::shared_ptr<LazyStorage> storage, int64_t offset,
                                             std::vector<int64_t> shape) {
  auto a = std::make_shared<ArrayState>();
  a->storage = std::move(storage);
  a->offset = offset;
  a->shape = std::move(shape);
  a->dtype = a->storage->dtype();
  a->set_inline_shape();
  a->set_bytes();
  a->id = next_array_id_++;
  a->trace = weak_from_this();
  a->owner = this;
  return a;
}

std::shared_ptr<ArrayState> Trace::new_deferred_array(DType dtype, std::vector<int64_t> shape) {
  return new_state(std::make_shared<LazyStorage>(dtype, shape), 0, shape);
}

std::shared_ptr<ArrayState> Trace::new_array(Tensor data) {
  std::vector<int64_t> shape = data.shape();
  return new_state(std::make_shared<LazyStorage>(std::move(data)), 0, std::move(shape));
}

std::shared_ptr<ArrayState> Trace::new_view(const ArrayState& parent, int64_t offset, std::vector<int64_t> shape) {
  std::shared_ptr<ArrayState> view = new_state(parent.storage, parent.offset + offset, std::move(shape));
  view->zero_hint = parent.zero_hint && parent.storage->zero_pending();
  return view;
}

Trace::KernelEntry& Trace::kernel_entry(const KernelRef& kernel) {
  auto [it, fresh] = kernels_.try_emplace(kernel.get());
  if (fresh) {
    it->second.kernel = kernel;
    it->second.id = static_cast<uint32_t>(kernels_.size());
    it->second.accesses = std::make_shared<const std::vector<ArrayAccessSite>>(collect_accesses(*kernel));
    for (const KernelParam& p : kernel->params) it->second.param_access.push_back(p.access);
    for (size_t p = 0; p < kernel->params.size(); ++p) it->second.overwrites.push_back(overwrites_before_reading(*kernel, p));
  }
  return it->second;
}

void Trace::settle_zeros(const std::vector<TraceArg>& args, const KernelEntry& entry, const interp::KernelBinding& binding) {
  for (size_t p = 0; p < args.size(); ++p) {
    const std::shared_ptr<ArrayState>& a = args[p].array;
    if (!a || !a->zero_hint) continue;
    a->zero_hint = false;
    LazyStorage& storage = *a->storage;
    if (!storage.zero_pending()) continue;
    storage.set_zero_pending(false);
    // The call overwrites the whole storage before reading it, through this
    // parameter alone: the zeros are never seen.
    int64_t numel = 1;
    for (int64_t e : storage.shape()) numel *= e;
    const bool whole = a->offset == 0 && a->shape_only().numel() == numel;
    bool overwritten = whole && entry.overwrites[p] && binding.extents == a->shape;
    for (size_t q = 0; q < args.size() && overwritten; ++q) {
      overwritten = q == p || !args[q].array || args[q].array->storage != a->storage;
    }
    if (overwritten) continue;
    push_zero_fill(whole ? a : new_state(a->storage, 0, storage.shape()));
  }
}

void Trace::record(const KernelRef& kernel, const std::vector<LazyArg>& args, std::shared_ptr<ScalarState> result) {
  const Clock::time_point t0 = Clock::now();
  if (!kernel) throw UserError("lazy call: no kernel");
  const UserKernel& k = *kernel;
  if (result && !k.is_reduction()) throw UserError(fmt::format("kernel '{}' is a parallel_for; record it with call()", k.name));
  if (!result && k.is_reduction()) {
    throw UserError(fmt::format("kernel '{}' is a reduction; record it with reduce(), which returns its value", k.name));
  }
  if (args.size() != k.params.size()) {
    throw UserError(fmt::format("kernel '{}' takes {} argument{}, got {}", k.name, k.params.size(),
                                k.params.size() == 1 ? "" : "s", args.size()));
  }
  // The arrays' handles are usually cold (the last kernels streamed the
  // caches): ask for all of them at once rather than miss on each in turn.
  for (const LazyArg& a : args) {
    if (const lazy::ArrayState* st = a.array.state_.get()) {
      __builtin_prefetch(st);
      __builtin_prefetch(reinterpret_cast<const char*>(st) + 64);
      __builtin_prefetch(reinterpret_cast<const char*>(st) + 128);
    }
  }
  KernelEntry& entry = kernel_entry(kernel);
  TraceCall call;
  call.kernel = kernel.get();
  if (!spare_args_.empty()) {
    call.args = std::move(spare_args_.back());
    spare_args_.pop_back();
  }
  call.args.resize(args.size());
  for (size_t p = 0; p < args.size(); ++p) call.args[p].access = entry.param_access[p];
  // What the binding depends on, as words: a call like the kernel's last one
  // shares its binding (binding allocates, and recording must be cheap).
  bound_from_.clear();
  bool zero_hints = false;
  for (size_t p = 0; p < args.size(); ++p) {
    const LazyArg& a = args[p];
    if (a.array.valid()) {
      const std::shared_ptr<ArrayState>& state = a.array.state_;
      if (!state->belongs_to(this)) {
        throw UserError(fmt::format("kernel '{}': argument {} ('{}') is an array of another LazyRuntime", k.name, p + 1,
                                    k.params[p].name));
      }
      call.args[p].array = state;
      zero_hints = zero_hints || state->zero_hint;
      bound_from_.push_back(static_cast<int64_t>(state->dtype) - 64);
      if (state->rank_inline >= 0) {
        bound_from_.insert(bound_from_.end(), state->dims.begin(), state->dims.begin() + state->rank_inline);
      } else {
        bound_from_.insert(bound_from_.end(), state->shape.begin(), state->shape.end());
      }
      continue;
    }
    if (a.future.valid()) {
      std::shared_ptr<ScalarState> f = a.future.state_;
      if (!f->ready) {
        // Another runtime's reduction runs there first: this trace orders only its own calls.
        std::shared_ptr<Trace> owner = f->trace.lock();
        if (owner.get() != this) {
          if (!owner) throw UserError(fmt::format("kernel '{}': argument {} is the value of a reduction whose LazyRuntime was destroyed", k.name, p + 1));
          owner->flush_for(*f);
        }
      }
      if (f->ready) {
        call.args[p].scalar = is_float(f->value.dtype()) ? TraceScalar(f->value.get_f64(0)) : TraceScalar(f->value.get_i64(0));
      } else {
        call.args[p].future = f;
        // A placeholder of the parameter's kind until the value exists.
        call.args[p].scalar = is_float(k.params[p].dtype) ? TraceScalar(0.0) : TraceScalar(int64_t{0});
      }
    } else {
      call.args[p].scalar = a.is_float ? TraceScalar(a.float_value) : TraceScalar(a.int_value);
    }
    const TraceScalar& v = call.args[p].scalar;
    bound_from_.push_back(v.is_float ? -1 : -2);
    bound_from_.push_back(v.is_float ? std::bit_cast<int64_t>(v.float_value) : v.int_value);
  }
  const uint64_t hash = hash_words(bound_from_);
  call.binding = entry.find(bound_from_, hash);
  if (!call.binding) {
    call.binding = std::make_shared<const interp::KernelBinding>(interp::bind_kernel(k, arguments(call, Memory::ShapeOnly)));
    entry.keep(bound_from_, hash, call.binding);
  }
  if (zero_hints) settle_zeros(call.args, entry, *call.binding);
  call.accesses = entry.accesses.get();
  call.kernel_id = entry.id;
  call.result = std::move(result);
  ++stats_.calls;
  pending_.push_back(std::move(call));
  // What the next call writes is cold (the kernels streamed the caches since
  // it was last used): the argument vector it reuses and its slot in the
  // pending list. Ask for them now; the caller's code runs in between.
  if (!spare_args_.empty()) {
    const std::vector<TraceArg>& next = spare_args_.back();
    for (size_t b = 0; b < next.capacity() * sizeof(TraceArg); b += 64) {
      __builtin_prefetch(reinterpret_cast<const char*>(next.data()) + b, 1);
    }
  }
  if (pending_.size() < pending_.capacity()) {
    __builtin_prefetch(pending_.data() + pending_.size(), 1);
    __builtin_prefetch(reinterpret_cast<const char*>(pending_.data() + pending_.size()) + 64, 1);
  }
  stats_.record_seconds += seconds_since(t0);
  if (options_.mode == LazyOptions::Mode::Eager || options_.mode == LazyOptions::Mode::Reference) flush_all();
}

void Trace::flush_for(const ArrayState& a) {
  for (size_t i = pending_.size(); i-- > 0;) {
    const TraceCall& c = pending_[i];
    for (size_t p = 0; p < c.args.size(); ++p) {
      if (c.args[p].array && c.args[p].array->overlaps(a) && writes(c.args[p].access)) return run_closure({i});
    }
  }
}

void Trace::flush_touching(const ArrayState& a) {
  std::vector<size_t> targets;
  for (size_t i = 0; i < pending_.size(); ++i) {
    for (const TraceArg& b : pending_[i].args) {
      if (b.array && b.array->overlaps(a)) {
        targets.push_back(i);
        break;
      }
    }
  }
  if (!targets.empty()) run_closure(targets);
}

void Trace::flush_for(const ScalarState& s) {
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].result.get() == &s) return run_closure({i});
  }
}

void Trace::flush_all() {
  std::vector<size_t> all(pending_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (!all.empty()) run_closure(all);
  backend_->synchronize();  // every kernel done, and a device fault reported, before flush() returns
}

void Trace::run_closure(std::vector<size_t> targets) {
  const Clock::time_point t0 = Clock::now();
  // Walk back from the latest target: an earlier call is needed when a needed
  // call reads what it writes (read after write), writes what it reads or
  // writes (write after read, write after write), or reads its reduction's value.
  std::vector<char>& needed = scratch_->needed;
  needed.assign(pending_.size(), 0);
  for (size_t t : targets) needed[t] = 1;
  // Arrays by region: views of one storage that overlap are one array here.
  // Each region notes whether later needed calls read it, write it.
  constexpr uint8_t kRead = 1;
  constexpr uint8_t kWritten = 2;
  RegionsByStorage& later = scratch_->later;
  later.clear();
  std::vector<uint8_t>& later_access = scratch_->later_access;
  later_access.clear();
  std::set<const ScalarState*> futures_later;
  const size_t last = *std::max_element(targets.begin(), targets.end());
  ++epoch_;
  for (size_t i = last + 1; i-- > 0;) {
    TraceCall& c = pending_[i];
    if (!needed[i]) {
      bool hazard = c.result && futures_later.count(c.result.get());
      for (size_t p = 0; p < c.args.size() && !hazard; ++p) {
        const ArrayState* a = c.args[p].array.get();
        if (!a) continue;
        const ArrayAccess access = c.args[p].access;
        const uint8_t conflicts = (writes(access) ? kRead | kWritten : 0) | (reads(access) ? kWritten : 0);
        later.for_overlapping(a, [&](int r) { hazard = hazard || (later_access[static_cast<size_t>(r)] & conflicts) != 0; });
      }
      if (!hazard) continue;
      needed[i] = 1;
    }
    for (size_t p = 0; p < c.args.size(); ++p) {
      if (c.args[p].future) futures_later.insert(c.args[p].future.get());
      const ArrayState* a = c.args[p].array.get();
      if (!a) continue;
      // A handle met before in this walk has its region on it.
      if (a->stamp != epoch_) {
        a->stamp = epoch_;
        a->region = later.add(a);
        if (later_access.size() < later.regions().size()) later_access.resize(later.regions().size(), 0);
      }
      const ArrayAccess access = c.args[p].access;
      later_access[static_cast<size_t>(a->region)] |= (reads(access) ? kRead : 0) | (writes(access) ? kWritten : 0);
    }
  }
  // The rest stay pending, in order, in place; when every call is needed
  // (the common case) the partition takes pending_'s buffer whole.
  std::vector<TraceCall> partition;
  const size_t taken = static_cast<size_t>(std::count(needed.begin(), needed.end(), 1));
  if (taken == pending_.size()) {
    partition.swap(pending_);
  } else {
    partition.reserve(taken);
    size_t kept = 0;
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (needed[i]) {
        partition.push_back(std::move(pending_[i]));
      } else {
        if (kept != i) pending_[kept] = std::move(pending_[i]);
        ++kept;
      }
    }
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(kept), pending_.end());
  }
  stats_.analysis_seconds += seconds_since(t0);
  run_partition(partition);
  // Argument vectors are kept for later calls (record() allocates none then),
  // and so is the larger buffer of calls.
  for (TraceCall& c : partition) {
    if (spare_args_.size() >= kSpareArgs || c.args.capacity() == 0) continue;
    c.args.clear();
    spare_args_.push_back(std::move(c.args));
  }
  partition.clear();
  if (pending_.empty() && partition.capacity() > pending_.capacity()) partition.swap(pending_);
}

void Trace::resolve_futures(TraceCall& call) {
  bool changed = false;
  for (size_t p = 0; p < call.args.size(); ++p) {
    if (!call.args[p].future) continue;
    const ScalarState& f = *call.args[p].future;
    STITCH_ASSERT(f.ready, "lazy: a call runs before the reduction whose value it reads");
    call.args[p].scalar = is_float(f.value.dtype()) ? TraceScalar(f.value.get_f64(0)) : TraceScalar(f.value.get_i64(0));
    call.args[p].future.reset();
    changed = true;
  }
  if (changed) call.binding = std::make_shared<const interp::KernelBinding>(interp::bind_kernel(*call.kernel, arguments(call, Memory::ShapeOnly)));
}

std::vector<KernelArg> Trace::arguments(TraceCall& call, Memory memory) {
  std::vector<KernelArg> args;
  args.reserve(call.args.size());
  for (size_t p = 0; p < call.args.size(); ++p) {
    if (const ArrayState* a = call.args[p].array.get()) {
      const bool write = writes(call.args[p].access);
      switch (memory) {
        case Memory::ShapeOnly: args.emplace_back(a->shape_only()); break;
        case Memory::Host: args.emplace_back(a->host_view(write)); break;
        case Memory::Backend: args.emplace_back(a->memory_view(*backend_, write)); break;
      }
    } else {
      args.push_back(call.args[p].scalar.arg());
    }
  }
  return args;
}

void Trace::run_partition(std::vector<TraceCall>& calls) {
  ++stats_.partitions;
  if (dump_wanted("trace")) {
    std::string text;
    for (size_t i = 0; i < calls.size(); ++i) text += fmt::format("  {}: {}\n", i, describe_call(calls[i]));
    dump("trace", text);
  }
  const bool fusing = options_.mode == LazyOptions::Mode::Fused || options_.mode == LazyOptions::Mode::FusedReference;
  if (!fusing || calls.size() == 1) {
    for (TraceCall& c : calls) c.graph ? run_graph(c) : run_single(c);
    return;
  }
  if (std::none_of(calls.begin(), calls.end(), [](const TraceCall& c) { return c.graph != nullptr; })) {
    run_fused(calls);
    return;
  }
  // Graph calls run alone; the user-kernel calls between them are fused.
  std::vector<TraceCall> run;
  for (TraceCall& c : calls) {
    if (!c.graph) {
      run.push_back(std::move(c));
      continue;
    }
    if (run.size() == 1) run_single(run[0]);
    if (run.size() > 1) run_fused(run);
    run.clear();
    run_graph(c);
  }
  if (run.size() == 1) run_single(run[0]);
  if (run.size() > 1) run_fused(run);
}

std::vector<std::shared_ptr<ArrayState>> Trace::record_graph(std::shared_ptr<const GraphCall> graph,
                                                             const std::vector<std::shared_ptr<ArrayState>>& inputs) {
  const Clock::time_point t0 = Clock::now();
  const Graph& g = graph->graph;
  std::vector<InputType> types;
  for (const std::shared_ptr<ArrayState>& a : inputs) {
    if (!a->belongs_to(this)) throw UserError(fmt::format("graph '{}': an input is an array of another LazyRuntime", g.name()));
    types.push_back({a->storage->dtype(), a->shape});
    // A graph reads its inputs whole: pending zeros are made now, on the host.
    if (a->zero_hint) {
      a->zero_hint = false;
      if (a->storage->zero_pending()) a->storage->host(false);
    }
  }
  SymbolBindings bindings = bind_input_types(g, types);
  TraceCall call;
  call.graph = std::move(graph);
  std::vector<std::shared_ptr<ArrayState>> outputs;
  for (const std::shared_ptr<ArrayState>& a : inputs) {
    call.args.push_back({a, nullptr, TraceScalar(), ArrayAccess::Read});
  }
  for (const GraphOutput& o : g.outputs()) {
    const TensorType& t = g.type(o.value);
    outputs.push_back(new_array(Tensor(t.dtype, concrete_shape(t.shape, bindings))));
    call.args.push_back({outputs.back(), nullptr, TraceScalar(), ArrayAccess::Write});
  }
  ++stats_.calls;
  pending_.push_back(std::move(call));
  stats_.record_seconds += seconds_since(t0);
  if (options_.mode == LazyOptions::Mode::Eager || options_.mode == LazyOptions::Mode::Reference) flush_all();
  return outputs;
}

void Trace::run_graph(TraceCall& call) {
  const GraphCall& gc = *call.graph;
  const size_t inputs = gc.graph.params().size();
  std::vector<Tensor> in;
  for (size_t i = 0; i < inputs; ++i) {
    // The executable takes tensors: a view's region is copied out.
    const ArrayState& a = *call.args[i].array;
    Tensor t = Tensor::uninitialized(a.storage->dtype(), a.shape);
    ArrayView v = a.host_view(false);
    if (v.nbytes() > 0) std::memcpy(t.raw(), v.data, v.nbytes());
    in.push_back(std::move(t));
  }
  std::vector<Tensor> out;
  if (options_.mode == LazyOptions::Mode::Reference || options_.mode == LazyOptions::Mode::FusedReference) {
    out = interpret(gc.graph, in);
    ++stats_.kernels;
  } else {
    Clock::time_point t0 = Clock::now();
    std::unique_ptr<BackendGraph>& exe = graphs_[gc.key];
    if (!exe) exe = backend_->compile_graph(gc.graph);
    stats_.compile_seconds += seconds_since(t0);
    t0 = Clock::now();
    out = exe->run(in);
    stats_.run_seconds += seconds_since(t0);
    stats_.kernels += exe->kernel_count();
  }
  for (size_t o = 0; o < out.size(); ++o) {
    ArrayView v = call.args[inputs + o].array->host_view(true);
    if (v.nbytes() > 0) std::memcpy(v.data, out[o].raw(), v.nbytes());
  }
}

KernelRef Trace::elementwise_kernel(OpKind op, const std::vector<std::pair<bool, DType>>& operands, int rank,
                                    const Attrs& attrs, DType* result) {
  std::vector<TensorType> types;
  for (const auto& [is_array, dtype] : operands) types.push_back(TensorType{dtype, {}});
  Attrs normalized = attrs;
  *result = infer_type(op, types, normalized).dtype;
  std::string key = fmt::format("{} {} {}", op_name(op), rank, result_key(normalized));
  for (const auto& [is_array, dtype] : operands) key += fmt::format(" {}{}", is_array ? "a" : "s", dtype_name(dtype));
  KernelRef& k = elementwise_[key];
  if (k) return k;
  // out[i0, ...] = op(a0[i0, ...], s1, ...): one index per element.
  UserKernelBuilder b(fmt::format("{}_{}", op_name(op), dtype_name(*result)));
  Shape shape;
  for (int d = 0; d < rank; ++d) shape.push_back(Dim::symbol(fmt::format("d{}", d)));
  std::vector<KExpr> index;
  std::vector<KExpr> args;
  for (size_t i = 0; i < operands.size(); ++i) {
    std::string name = fmt::format("x{}", i);
    if (operands[i].first) {
      b.array(name, operands[i].second, shape);
      args.push_back(kernel_load(name, {}));
    } else {
      args.push_back(b.scalar(name, operands[i].second));
    }
  }
  b.array("out", *result, shape);
  for (int d = 0; d < rank; ++d) index.push_back(b.index(fmt::format("i{}", d), b.symbol(fmt::format("d{}", d))));
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].first) args[i] = b.load(fmt::format("x{}", i), index);
  }
  KExpr value = op == OpKind::Cast ? kernel_cast(args[0], normalized.get("to").as_dtype()) : kernel_op(op, args);
  b.store("out", index, value);
  k = std::make_shared<const UserKernel>(b.finish());
  return k;
}

void Trace::zeros(const std::shared_ptr<ArrayState>& array) {
  if (options_.mode == LazyOptions::Mode::Eager || options_.mode == LazyOptions::Mode::Reference) {
    record_zero_fill(array);
    return;
  }
  array->storage->set_zero_pending(true);
  array->zero_hint = true;
}

void Trace::record_zero_fill(const std::shared_ptr<ArrayState>& array) {
  const Clock::time_point t0 = Clock::now();
  push_zero_fill(array);
  stats_.record_seconds += seconds_since(t0);
  if (options_.mode == LazyOptions::Mode::Eager || options_.mode == LazyOptions::Mode::Reference) flush_all();
}

void Trace::push_zero_fill(const std::shared_ptr<ArrayState>& array) {
  // What record() would make of zero_fill_kernel(dtype, rank) called on the
  // array, without checking what holds by construction (one array argument
  // whose shape binds the kernel's symbols d0, d1, ... and is the range).
  const KernelRef& kernel = zero_fill_kernel(array->storage->dtype(), static_cast<int>(array->shape.size()));
  TraceCall call;
  call.kernel = kernel.get();
  call.args.push_back({array, nullptr, TraceScalar(), kernel->params[0].access});
  KernelEntry& entry = kernel_entry(kernel);
  const uint64_t hash = hash_words(array->shape);
  call.binding = entry.find(array->shape, hash);
  if (!call.binding) {
    auto b = std::make_shared<interp::KernelBinding>();
    b->scalars.resize(1);
    b->extents = array->shape;
    b->index_count = 1;
    for (int64_t e : array->shape) b->index_count *= e;
    call.binding = b;
    entry.keep(array->shape, hash, std::move(b));
  }
  call.accesses = entry.accesses.get();
  call.kernel_id = entry.id;
  ++stats_.calls;
  pending_.push_back(std::move(call));
}

KernelRef Trace::zero_fill_kernel(DType dtype, int rank) {
  KernelRef& k = zero_fills_[{dtype, rank}];
  if (k) return k;
  // x[i0, ...] = 0: what zeros() records.
  UserKernelBuilder b(fmt::format("zeros_{}", dtype_name(dtype)));
  Shape shape;
  for (int d = 0; d < rank; ++d) shape.push_back(Dim::symbol(fmt::format("d{}", d)));
  b.array("x", dtype, shape);
  std::vector<KExpr> index;
  for (int d = 0; d < rank; ++d) index.push_back(b.index(fmt::format("i{}", d), b.symbol(fmt::format("d{}", d))));
  b.store("x", index, dtype == DType::boolean ? kernel_bool(false) : kernel_literal(int64_t{0}));
  k = std::make_shared<const UserKernel>(b.finish());
  return k;
}

void Trace::run_single(TraceCall& call) {
  resolve_futures(call);
  Tensor result;
  if (options_.mode == LazyOptions::Mode::Reference || options_.mode == LazyOptions::Mode::FusedReference) {
    result = interpret_kernel(*call.kernel, arguments(call, Memory::Host));
    ++stats_.kernels;
  } else {
    std::vector<KernelArg> args = arguments(call, Memory::Backend);
    Clock::time_point t0 = Clock::now();
    kir::UserKernelShape shape = lower::user_kernel_shape(call.binding->extents);
    shape.restrict_array = runtime::cpu::restrict_flags(*call.kernel, args);
    shape.check_indices = !interp::indices_proven_in_range(*call.kernel, *call.binding, args);
    std::string key = fmt::format("{} {} {}", shape.lanes, shape.rows_per_block, shape.check_indices ? 'c' : 'u');
    for (bool r : shape.restrict_array) key += r ? '1' : '0';
    auto& compiled = singles_[{call.kernel, key}];
    if (!compiled) compiled = backend_->compile(*call.kernel, shape);
    stats_.compile_seconds += seconds_since(t0);
    t0 = Clock::now();
    result = compiled->run(*call.kernel, args);
    stats_.run_seconds += seconds_since(t0);
    ++stats_.kernels;
    stats_.checked_kernels += shape.check_indices ? 1 : 0;
  }
  if (call.result) {
    call.result->value = std::move(result);
    call.result->ready = true;
  }
}

}  // namespace stitch::lazy
