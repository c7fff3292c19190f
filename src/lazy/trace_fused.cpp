// Running a partition of lazy calls as fused kernels (Trace::run_fused,
// docs/lazy.md): the partition's structure and the plan cached for it, each
// fused segment's kernel and arguments prepared before any runs, then the runs.
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "interp/index_bounds.h"
#include "lazy/partition_plan.h"
#include "lazy/trace.h"
#include "lazy/trace_scratch.h"
#include "lower/lower_user_kernel.h"
#include "stitch/interpreter.h"

namespace stitch::lazy {

using namespace trace_detail;

namespace {

// The plan's segments, their fused kernels and prepared arguments were last
// touched before the last flush's kernels streamed the caches. Ask for them
// in passes, each over every segment, so that the misses overlap: the
// segments, then what they point to, then what that points to.
template <class SegmentPlans, class PreparedSegments>
void prefetch_plan(const SegmentPlans& plan, PreparedSegments& prepared) {
  for (const auto& seg : plan) __builtin_prefetch(&seg);
  for (size_t i = 0; i < plan.size(); ++i) {
    const auto& seg = plan[i];
    __builtin_prefetch(seg.regions.data());
    __builtin_prefetch(seg.extents.data());
    __builtin_prefetch(&prepared[i]);
    if (const FusedKernel* f = seg.fused.get()) {
      __builtin_prefetch(&f->storage_count);
      __builtin_prefetch(reinterpret_cast<const char*>(&f->storage_count) + 64);
    }
  }
  for (size_t i = 0; i < plan.size(); ++i) {
    if (const FusedKernel* f = plan[i].fused.get()) {
      __builtin_prefetch(f->scalar_sources.data());
      __builtin_prefetch(f->in_register.data());
      __builtin_prefetch(f->written.data());
    }
    __builtin_prefetch(prepared[i].args.data(), 1);
  }
}

}  // namespace

Trace::PartitionCache& Trace::describe_partition(std::vector<TraceCall>& calls) {
  // Storages in first-use order, and the partition's structure: what decides
  // the cuts (kernels, how arrays are shared, which values are read, sizes to
  // a power of two, which storages outlive the partition). `detail` adds what
  // the fused kernels depend on beyond the cuts: the exact extents.
  Scratch& scratch = *scratch_;
  RegionsByStorage& storages = scratch.storages;
  storages.clear();
  std::unordered_map<const ScalarState*, int>& result_of = scratch.result_of;
  result_of.clear();
  std::string& signature = scratch.signature;
  signature.clear();
  std::string& detail = scratch.detail;
  detail.clear();
  std::vector<int>& arg_region = scratch.arg_region;  // per call and parameter, flat: the region, or -1
  arg_region.clear();
  std::vector<size_t>& first_arg = scratch.first_arg;
  first_arg.assign(calls.size() + 1, 0);
  bool& reads_results = scratch.reads_results;
  reads_results = false;
  ++epoch_;
  // Handles (ArrayState objects) in these calls: how many references the
  // calls hold to each, and the last call holding one, stamped on the handle.
  std::vector<const std::shared_ptr<ArrayState>*>& handles = scratch.handles;
  handles.clear();
  signature.reserve(calls.size() * 48);
  detail.reserve(calls.size() * 16);
  arg_region.reserve(calls.size() * 4);
  for (size_t c = 0; c < calls.size(); ++c) {
    const TraceCall& call = calls[c];
    first_arg[c] = arg_region.size();
    append_word(signature, call.kernel_id);
    for (size_t p = 0; p < call.args.size(); ++p) {
      int s = -1;
      if (const std::shared_ptr<ArrayState>& a = call.args[p].array) {
        if (a->stamp != epoch_) {
          a->stamp = epoch_;
          a->refs = 0;
          a->region = storages.add(a.get());
          handles.push_back(&a);
        }
        s = a->region;
        ++a->refs;
        a->last_call = c;
      }
      if (call.args[p].future) {
        auto it = result_of.find(call.args[p].future.get());
        reads_results = reads_results || it != result_of.end();
        append_word(signature, kFutureTag + (it != result_of.end() ? it->second : -1));
      }
      arg_region.push_back(s);
      append_word(signature, s);
    }
    if (call.result) result_of[call.result.get()] = static_cast<int>(c);
    append_word(signature, std::bit_width(static_cast<uint64_t>(call.binding->index_count)));
    for (int64_t e : call.binding->extents) append_word(detail, e);
  }
  first_arg[calls.size()] = arg_region.size();
  // Whether indices are proven in range depends on the arrays' shapes too.
  for (const ArrayState* r : storages.regions()) {
    for (int64_t e : r->shape) append_word(detail, e);
  }
  // A storage dies with the segment holding its last use when every handle on
  // it is held only by these calls (no user handle, view or pending call can
  // read it again): it may then live in registers there.
  storages.number_storages();
  std::vector<char>& outlives = scratch.outlives;
  outlives.assign(static_cast<size_t>(storages.storage_count()), 0);
  std::vector<long>& handle_count = scratch.handle_count;
  handle_count.assign(outlives.size(), 0);
  std::vector<size_t>& last_use = scratch.last_use;
  last_use.assign(outlives.size(), 0);
  for (const std::shared_ptr<ArrayState>* h : handles) {
    const ArrayState& a = **h;
    const size_t st = static_cast<size_t>(storages.storage_of(a.region));
    ++handle_count[st];
    last_use[st] = std::max(last_use[st], a.last_call);
    if (h->use_count() != a.refs) outlives[st] = 1;
  }
  for (size_t r = 0; r < storages.regions().size(); ++r) {
    const size_t st = static_cast<size_t>(storages.storage_of(static_cast<int>(r)));
    if (storages.regions()[r]->storage.use_count() != handle_count[st]) outlives[st] = 1;
  }
  // Which storages are temporaries decides cuts (the cost model) and kernels: part of the structure.
  for (char o : outlives) signature += o ? 'o' : 'd';
  // Distinct regions that overlap (views of one storage): part of the structure too.
  std::vector<std::pair<int, int>>& overlapping = scratch.overlapping;
  overlapping = storages.overlapping();
  for (const auto& [a, b] : overlapping) {
    append_word(signature, kOverlapTag + static_cast<int64_t>(a) * static_cast<int64_t>(storages.regions().size()) + b);
  }
  // A program whose partitions keep changing shape would grow the plan cache
  // without end; past a bound it starts again (plans are cheap to remake).
  auto found = plans_.find(signature);
  if (found == plans_.end()) {
    if (plans_.size() >= kMaxPlans) plans_.clear();
    found = plans_.emplace(signature, PartitionCache{}).first;
  }
  return found->second;
}

void Trace::plan_segments(std::vector<TraceCall>& calls, std::vector<SegmentPlan>& plan) {
  Scratch& scratch = *scratch_;
  const RegionsByStorage& storages = scratch.storages;
  const std::vector<int>& arg_region = scratch.arg_region;
  const std::vector<size_t>& first_arg = scratch.first_arg;
  const std::vector<char>& outlives = scratch.outlives;
  const std::unordered_map<const ScalarState*, int>& result_of = scratch.result_of;
  const bool reads_results = scratch.reads_results;
  const std::vector<std::pair<int, int>>& overlapping = scratch.overlapping;
  std::vector<PlannedCall> planned(calls.size());
  for (size_t c = 0; c < calls.size(); ++c) {
    PlannedCall& pc = planned[c];
    std::vector<int> call_storage(arg_region.begin() + static_cast<std::ptrdiff_t>(first_arg[c]),
                                  arg_region.begin() + static_cast<std::ptrdiff_t>(first_arg[c + 1]));
    pc.view = CallView{calls[c].kernel, calls[c].accesses, call_storage};
    pc.reduction = calls[c].kernel->is_reduction();
    if (reads_results) {
      for (const TraceArg& arg : calls[c].args) {
        const std::shared_ptr<ScalarState>& f = arg.future;
        auto it = f ? result_of.find(f.get()) : result_of.end();
        if (it != result_of.end() && it->second < static_cast<int>(c)) pc.reads_results_of.push_back(it->second);
      }
    }
    pc.extents = calls[c].binding->extents;
    for (size_t p = 0; p < calls[c].args.size(); ++p) {
      if (!calls[c].args[p].array) continue;
      ArrayAccess a = calls[c].args[p].access;
      pc.touches.push_back({call_storage[p], static_cast<int64_t>(calls[c].args[p].array->shape_only().nbytes()), reads(a), writes(a)});
    }
  }
  std::vector<char> temporary(outlives.size());
  for (size_t st = 0; st < outlives.size(); ++st) temporary[st] = !outlives[st];
  // The model counts traffic per storage; regions are what calls touch, so
  // a region is a temporary when its storage is.
  std::vector<char> region_temporary(storages.regions().size());
  for (size_t r = 0; r < region_temporary.size(); ++r) {
    region_temporary[r] = temporary[static_cast<size_t>(storages.storage_of(static_cast<int>(r)))];
  }
  CostModel model;
  model.target = backend_->target();
  PartitionPlan cuts = plan_partition(planned, overlapping, model, region_temporary);
  for (const Segment& s : cuts.segments) {
    SegmentPlan sp;
    sp.begin = s.begin;
    sp.end = s.end;
    plan.push_back(std::move(sp));
  }
  if (dump_wanted("partitions")) {
    std::string text = fmt::format("  {} calls -> {} kernels (predicted {:.1f} us fused, {:.1f} us unfused)\n",
                                   calls.size(), cuts.segments.size(), cuts.predicted_seconds * 1e6,
                                   cuts.unfused_seconds * 1e6);
    for (const Segment& s : cuts.segments) text += fmt::format("  kernel: calls {}..{}\n", s.begin, s.end - 1);
    for (const std::string& r : cuts.refusals) text += "  not fused: " + r + "\n";
    dump("partitions", text);
  }
}

// `same_shapes`: the partition's extents and shapes are those of the last
// flush of this plan, which the segment was prepared for.
void Trace::gather_segment(std::vector<TraceCall>& calls, SegmentPlan& seg, PreparedSegment& out, bool same_shapes) {
  const RegionsByStorage& storages = scratch_->storages;
  const FusedKernel& f = *seg.fused;
  stats_.arrays_in_registers += std::count(f.in_register.begin(), f.in_register.end(), 1);
  out.args.reserve(seg.regions.size() + f.scalar_sources.size() + seg.extents.size());
  // A storage in registers is never touched: its memory is not needed (nor
  // made). On a device, every array's memory is taken when the kernel runs
  // (a graph call before it may have written the host copy).
  const bool on_device = backend_->on_device();
  for (size_t s = 0; s < seg.regions.size(); ++s) {
    const ArrayState* a = storages.regions()[static_cast<size_t>(seg.regions[s])];
    const bool late = !f.in_register[s] && (on_device || !a->storage->allocated());
    if (late) out.late.emplace_back(out.args.size(), a);
    out.args.emplace_back(f.in_register[s] || late ? a->shape_only() : a->host_view(f.written[s]));
  }
  for (const auto& [c, p] : f.scalar_sources) out.args.push_back(calls[static_cast<size_t>(seg.begin + c)].args[static_cast<size_t>(p)].scalar.arg());
  for (int64_t e : seg.extents) out.args.emplace_back(e);
  // Indices proven in range for these extents and shapes (and scalars,
  // where an index reads one) hold for every run with them.
  if (same_shapes && seg.proof_known && !f.index_reads_scalars) {
    out.check_indices = !seg.proven;
    out.ready = true;
    return;
  }
  std::vector<int64_t>& proof_key = scratch_->proof_key;
  proof_key.clear();
  for (const KernelArg& a : out.args) {
    if (a.is_array) {
      proof_key.insert(proof_key.end(), a.array.shape, a.array.shape + a.array.rank);
    } else if (f.index_reads_scalars) {
      proof_key.push_back(a.is_float ? std::bit_cast<int64_t>(a.float_value) : a.int_value);
    }
    proof_key.push_back(-1);
  }
  if (!seg.proof_known || seg.proof_key != proof_key) {
    seg.proven = interp::indices_proven_in_range(f.kernel, interp::bind_kernel(f.kernel, out.args), out.args);
    seg.proof_known = true;
    seg.proof_key = proof_key;
  }
  out.check_indices = !seg.proven;
  out.ready = true;
}

void Trace::prepare_segment(std::vector<TraceCall>& calls, SegmentPlan& seg, PreparedSegment& out) {
  const Scratch& scratch = *scratch_;
  const RegionsByStorage& storages = scratch.storages;
  const std::vector<int>& arg_region = scratch.arg_region;
  const std::vector<size_t>& first_arg = scratch.first_arg;
  const std::vector<char>& outlives = scratch.outlives;
  const std::vector<size_t>& last_use = scratch.last_use;
  // Segment-local storages (partition regions in first-use order) and the
  // calls as the fused-kernel builder sees them.
  std::vector<int> regions;
  std::vector<SegmentCall> seg_calls;
  for (int c = seg.begin; c < seg.end; ++c) {
    TraceCall& call = calls[static_cast<size_t>(c)];
    resolve_futures(call);
    SegmentCall sc{call.kernel, {}, call.binding.get(), call.accesses};
    for (size_t p = 0; p < call.args.size(); ++p) {
      const int r = arg_region[first_arg[static_cast<size_t>(c)] + p];
      int s = -1;
      if (r >= 0) {
        s = static_cast<int>(std::find(regions.begin(), regions.end(), r) - regions.begin());
        if (s == static_cast<int>(regions.size())) regions.push_back(r);
      }
      sc.storage.push_back(s);
    }
    seg_calls.push_back(std::move(sc));
  }
  std::vector<StorageType> types;
  std::vector<bool> dead;
  for (int r : regions) {
    const ArrayState* a = storages.regions()[static_cast<size_t>(r)];
    types.push_back({a->storage->dtype(), static_cast<int>(a->shape.size())});
    const size_t st = static_cast<size_t>(storages.storage_of(r));
    dead.push_back(!outlives[st] && last_use[st] < static_cast<size_t>(seg.end));
  }
  // The fused range: the first `rank` dimensions (the smallest range's), each the largest extent.
  size_t rank = seg_calls[0].binding->extents.size();
  for (const SegmentCall& sc : seg_calls) rank = std::min(rank, sc.binding->extents.size());
  std::vector<int64_t> extents(rank, 0);
  for (const SegmentCall& sc : seg_calls) {
    for (size_t d = 0; d < extents.size(); ++d) extents[d] = std::max(extents[d], sc.binding->extents[d]);
  }
  // The kernel depends on which calls are guarded, which calls' ranges hold
  // which (where temporaries may live in registers), the loop shape and the
  // temporaries: its key.
  std::string key;
  for (size_t d = 0; d < extents.size(); ++d) {
    std::vector<int64_t> distinct;
    for (const SegmentCall& sc : seg_calls) distinct.push_back(sc.binding->extents[d]);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (const SegmentCall& sc : seg_calls) {
      auto rank = std::lower_bound(distinct.begin(), distinct.end(), sc.binding->extents[d]) - distinct.begin();
      key += static_cast<char>('0' + (distinct.size() - 1 - static_cast<size_t>(rank)) % 64);
    }
  }
  // Which calls run the rest of their range in one loop nest: each call's
  // rank, and whether its trailing extents are its predecessor's; and, when
  // ranks differ, every extent the calls bind (a row loop joins a run's loop
  // only when their extents are equal).
  const bool mixed = std::any_of(seg_calls.begin(), seg_calls.end(),
                                 [rank](const SegmentCall& sc) { return sc.binding->extents.size() > rank; });
  for (size_t c = 0; c < seg_calls.size() && mixed; ++c) {
    for (int64_t e : seg_calls[c].binding->extents) append_word(key, e);
    for (const auto& [symbol, value] : seg_calls[c].binding->symbols) append_word(key, value);
  }
  for (size_t c = 0; c < seg_calls.size(); ++c) {
    const std::vector<int64_t>& e = seg_calls[c].binding->extents;
    key += static_cast<char>('A' + e.size());
    const std::vector<int64_t>& prev = seg_calls[c > 0 ? c - 1 : 0].binding->extents;
    const bool same = c > 0 && e.size() > rank && e.size() == prev.size() &&
                      std::equal(e.begin() + static_cast<std::ptrdiff_t>(rank), e.end(), prev.begin() + static_cast<std::ptrdiff_t>(rank));
    key += same ? '=' : '/';
  }
  seg.shape = lower::user_kernel_shape(extents);
  append_word(key, seg.shape.lanes);
  append_word(key, seg.shape.rows_per_block);
  for (bool d : dead) key += d ? 'd' : 'l';
  if (!seg.fused || seg.fused_key != key) {
    seg.fused = std::make_shared<const FusedKernel>(build_fused_kernel(seg_calls, types, dead));
    seg.fused_key = key;
    seg.compiled.reset();
    seg.compiled_checked.reset();
    seg.proof_known = false;  // another kernel: prove it again
    if (dump_wanted("fused")) dump("fused", print_kernel(seg.fused->kernel));
  }
  seg.regions = std::move(regions);
  seg.extents = std::move(extents);
  gather_segment(calls, seg, out, false);
}

void Trace::run_segment(std::vector<TraceCall>& calls, SegmentPlan& seg, PreparedSegment& ready) {
  if (!ready.ready) {
    Clock::time_point t0 = Clock::now();
    prepare_segment(calls, seg, ready);
    stats_.analysis_seconds += seconds_since(t0);
  }
  const FusedKernel& f = *seg.fused;
  // The interpreter reads host memory; kernels the back end's.
  const bool interpreted = options_.mode == LazyOptions::Mode::FusedReference;
  for (const auto& [arg, a] : ready.late) {
    const bool write = f.written[arg];
    ready.args[arg] = KernelArg(interpreted ? a->host_view(write) : a->memory_view(*backend_, write));
  }
  if (interpreted) {
    Tensor result = interpret_kernel(f.kernel, ready.args);
    ++stats_.kernels;
    set_results(calls, seg.begin, seg.end, result);
    return;
  }
  Clock::time_point t0 = Clock::now();
  std::shared_ptr<const BackendKernel>& compiled = ready.check_indices ? seg.compiled_checked : seg.compiled;
  if (!compiled) {
    // Every storage is one parameter, so no two overlap: all __restrict__.
    kir::UserKernelShape shape = seg.shape;
    shape.restrict_array = runtime::cpu::restrict_flags(f.kernel, ready.args);
    shape.check_indices = ready.check_indices;
    compiled = backend_->compile(f.kernel, shape);
  }
  stats_.compile_seconds += seconds_since(t0);
  t0 = Clock::now();
  Tensor result = compiled->run(f.kernel, ready.args);
  stats_.run_seconds += seconds_since(t0);
  ++stats_.kernels;
  stats_.checked_kernels += ready.check_indices ? 1 : 0;
  set_results(calls, seg.begin, seg.end, result);}

void Trace::run_fused(std::vector<TraceCall>& calls) {
  Clock::time_point t0 = Clock::now();
  PartitionCache& cached = describe_partition(calls);
  std::vector<SegmentPlan>& plan = cached.segments;
  if (plan.empty()) {
    plan_segments(calls, plan);
    cached.detail.clear();
  } else {
    ++stats_.plan_cache_hits;
  }
  // Each fused segment's kernel and arguments, prepared before any runs: a
  // kernel streams the caches, and the bookkeeping after it would miss on
  // every pointer. When the exact extents and lifetimes are those the plan's
  // kernels were built for, only the arguments are gathered. A segment
  // reading a reduction's value is prepared when that value exists (its
  // extents may depend on it).
  const bool same_detail = cached.detail == scratch_->detail;
  std::vector<PreparedSegment>& prepared = scratch_->prepared;
  if (prepared.size() < plan.size()) prepared.resize(plan.size());
  for (size_t i = 0; i < plan.size(); ++i) prepared[i].clear();
  prefetch_plan(plan, prepared);
  for (size_t i = 0; i < plan.size(); ++i) {
    SegmentPlan& seg = plan[i];
    if (seg.end - seg.begin == 1) continue;
    bool waits = false;
    for (int c = seg.begin; c < seg.end && !waits; ++c) {
      for (const TraceArg& a : calls[static_cast<size_t>(c)].args) waits = waits || (a.future && !a.future->ready);
    }
    if (waits) {
      continue;  // prepared when it runs
    } else if (same_detail && seg.fused) {
      gather_segment(calls, seg, prepared[i], true);
    } else {
      prepare_segment(calls, seg, prepared[i]);
    }
  }
  // Segments waiting for a value are prepared each time they run (their
  // extents may depend on it); the others keep what they were prepared with.
  cached.detail = scratch_->detail;
  stats_.analysis_seconds += seconds_since(t0);
  for (size_t i = 0; i < plan.size(); ++i) {
    SegmentPlan& seg = plan[i];
    if (seg.end - seg.begin == 1) {
      run_single(calls[static_cast<size_t>(seg.begin)]);
    } else {
      run_segment(calls, seg, prepared[i]);
    }
  }
}

}  // namespace stitch::lazy
