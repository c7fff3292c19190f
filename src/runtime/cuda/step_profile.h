// Each launch's time on the device, for `stitch report --run --backend cuda`
// (docs/report.md): an event recorded on the stream before and after every
// step of a run, read when the times are asked for. Recording costs a few
// microseconds a launch, so runs are profiled only when asked
// (CudaExecutable::set_step_profiling).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/cuda/context.h"

namespace stitch::runtime::cuda {

class StepProfile {
 public:
  explicit StepProfile(CudaContext& context) : context_(context) {}
  ~StepProfile();
  StepProfile(const StepProfile&) = delete;
  StepProfile& operator=(const StepProfile&) = delete;

  // Around step `step` of the run being queued.
  void before(size_t step);
  void after();
  void end_run() { ++runs_; }

  // Waits for the stream, then each step's time summed over the runs so far.
  std::vector<double> seconds(size_t steps);
  int64_t runs() const { return runs_; }

 private:
  CUevent event();

  struct Pending {
    size_t step = 0;
    CUevent start = nullptr, end = nullptr;
  };
  CudaContext& context_;
  std::vector<Pending> pending_;
  std::vector<double> totals_;
  std::vector<CUevent> free_;  // events whose times were read, for reuse
  int64_t runs_ = 0;
};

}  // namespace stitch::runtime::cuda
