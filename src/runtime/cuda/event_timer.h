// Device time of work queued on a context's stream, measured between CUDA
// events (`stitch bench --backend cuda`, and the tuner's measurer on a GPU).
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/cuda/context.h"

namespace stitch::runtime::cuda {

// A pair of CUDA events per timed run: the device's own clock, so host-side
// launch overhead that overlaps earlier work is not counted, and a run that
// leaves the GPU idle between kernels is.
class EventTimer {
 public:
  // Events for `runs` timed runs.
  EventTimer(CudaContext& context, int runs);
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  // The seconds of each of the `runs` calls of `work` (what it queues on the
  // stream, between two events of its own), after `warmup` untimed calls;
  // waits for the stream once, after the last.
  template <class F>
  std::vector<double> seconds_each(int warmup, F&& work) {
    for (int i = 0; i < warmup; ++i) work();
    const size_t runs = events_.size() / 2;
    for (size_t i = 0; i < runs; ++i) {
      record(events_[2 * i]);
      work();
      record(events_[2 * i + 1]);
    }
    context_.synchronize();
    std::vector<double> seconds;
    for (size_t i = 0; i < runs; ++i) seconds.push_back(elapsed(events_[2 * i], events_[2 * i + 1]));
    return seconds;
  }

 private:
  void record(CUevent e) const;
  double elapsed(CUevent start, CUevent end) const;

  CudaContext& context_;
  std::vector<CUevent> events_;
};

}  // namespace stitch::runtime::cuda
