#include "runtime/cuda/event_timer.h"

namespace stitch::runtime::cuda {

EventTimer::EventTimer(CudaContext& context, int runs) : context_(context) {
  const DriverApi& api = context.api();
  events_.resize(2 * static_cast<size_t>(runs));
  for (CUevent& e : events_) check(api, api.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
}

EventTimer::~EventTimer() {
  for (CUevent e : events_) context_.api().cuEventDestroy(e);
}

void EventTimer::record(CUevent e) const {
  check(context_.api(), context_.api().cuEventRecord(e, context_.stream()), "cuEventRecord");
}

double EventTimer::elapsed(CUevent start, CUevent end) const {
  float ms = 0;
  check(context_.api(), context_.api().cuEventElapsedTime(&ms, start, end), "cuEventElapsedTime");
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace stitch::runtime::cuda
