// The last, partial step of a loop over a row or a tensor (docs/cpu-backend.md,
// Thread loops): a run of per-thread statements that is one `if (r < E) {...}`,
// r the thread's index plus an offset the same for every thread. GCC keeps a
// loop whose body calls exp under that test scalar (SLEEF has no masked vector
// variants for AVX2): a softmax over rows of 197 floats ran 2.8x slower than
// over 192. The C++ emitter instead moves the last step back to end at E (the
// threads below the shift have done their elements in the step before), so every
// thread reads in range, consecutive threads read consecutive elements, the
// values are computed in vector lanes for all (one vector math, the same bits for
// equal inputs), and only the writes are tested.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/cpu/region_analysis.h"
#include "kir/kernel.h"

namespace stitch::codegen::cpu {

struct TailGuard {
  const kir::IfStmt* guard = nullptr;  // its then-body: lets, assignments and stores
  std::string index;                   // r, a recomputed let
  kir::Expr offset;                    // r minus the thread's index
  int64_t limit = 0;                   // E, a constant of at least the thread count
};

// The guard of `run` (the region's remat lets already taken out), or nothing
// when the run has another shape: r must be read by no other recomputed let,
// the thread variable nowhere in the body but through r (nor a per-thread
// array an earlier loop filled), and the body must
// hold only lets (none read after the run), assignments and stores. `thread_var`: the loop variable of
// the threads (the lane within a warp, or the thread).
// `used`: the names the run reads, its remat lets' inputs included; `read_after`:
// names read outside the run (a let among them is a per-thread value every
// thread would write); `threads`: how many run (E must be at least that).
std::optional<TailGuard> tail_guard(const std::vector<const kir::Stmt*>& run, const RegionAnalysis& analysis,
                                    const std::string& thread_var, const std::set<std::string>& used,
                                    const std::set<std::string>& read_after, int64_t threads);

}  // namespace stitch::codegen::cpu
