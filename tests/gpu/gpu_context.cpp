#include "gpu_context.h"

#include <cstdlib>
#include <mutex>

namespace stitch::gpu_testing {
namespace {

struct OpenedContext {
  std::shared_ptr<runtime::cuda::CudaContext> context;
  std::string why;
};

OpenedContext& opened() {
  static OpenedContext state;
  return state;
}

// Releases the context when RUN_ALL_TESTS ends, before static destructors:
// the context's destructor synchronises the stream and hands the allocator's
// blocks back through the driver, which must still be usable then.
class ReleaseContextAtExit : public ::testing::Environment {
 public:
  void TearDown() override { opened().context.reset(); }
};

[[maybe_unused]] const ::testing::Environment* const kReleaseAtExit =
    ::testing::AddGlobalTestEnvironment(new ReleaseContextAtExit);

}  // namespace

std::shared_ptr<runtime::cuda::CudaContext> gpu_context(std::string* why) {
  static std::once_flag once;
  std::call_once(once, [] {
    OpenedContext& state = opened();
    // $STITCH_GPU_TEST_DRIVER names another driver library: the cuda_sim
    // tests run these suites on the simulated driver (docs/cuda-sim.md).
    const char* driver = std::getenv("STITCH_GPU_TEST_DRIVER");
    state.context = driver && *driver ? runtime::cuda::CudaContext::open(&state.why, 0, driver)
                                      : runtime::cuda::CudaContext::open(&state.why);
  });
  if (why) *why = opened().why;
  return opened().context;
}

}  // namespace stitch::gpu_testing
