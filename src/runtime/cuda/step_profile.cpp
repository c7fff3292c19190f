#include "runtime/cuda/step_profile.h"

#include "stitch/error.h"

namespace stitch::runtime::cuda {

StepProfile::~StepProfile() {
  const DriverApi& api = context_.api();
  for (const Pending& p : pending_) {
    api.cuEventDestroy(p.start);
    if (p.end) api.cuEventDestroy(p.end);
  }
  for (CUevent e : free_) api.cuEventDestroy(e);
}

CUevent StepProfile::event() {
  if (!free_.empty()) {
    CUevent e = free_.back();
    free_.pop_back();
    return e;
  }
  CUevent e = nullptr;
  check(context_.api(), context_.api().cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  return e;
}

void StepProfile::before(size_t step) {
  Pending p;
  p.step = step;
  p.start = event();
  pending_.push_back(p);
  check(context_.api(), context_.api().cuEventRecord(p.start, context_.stream()), "cuEventRecord");
}

void StepProfile::after() {
  STITCH_ASSERT(!pending_.empty() && pending_.back().end == nullptr, "StepProfile::after without before");
  pending_.back().end = event();
  check(context_.api(), context_.api().cuEventRecord(pending_.back().end, context_.stream()), "cuEventRecord");
}

std::vector<double> StepProfile::seconds(size_t steps) {
  context_.synchronize();
  const DriverApi& api = context_.api();
  if (totals_.size() < steps) totals_.resize(steps, 0.0);
  for (const Pending& p : pending_) {
    STITCH_ASSERT(p.end != nullptr, "a profiled step without its closing event");
    float ms = 0;
    check(api, api.cuEventElapsedTime(&ms, p.start, p.end), "cuEventElapsedTime");
    if (p.step < totals_.size()) totals_[p.step] += static_cast<double>(ms) * 1e-3;
    free_.push_back(p.start);
    free_.push_back(p.end);
  }
  pending_.clear();
  return std::vector<double>(totals_.begin(), totals_.begin() + static_cast<std::ptrdiff_t>(steps));
}

}  // namespace stitch::runtime::cuda
