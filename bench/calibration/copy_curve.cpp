// Measures the effective copy bandwidth of this machine as a function of the
// bytes one kernel moves (DESIGN.md, Fusion planners: the delta evaluator's
// memory time comes from a measured bandwidth curve M(V)). Built and run by
// scripts/measure_bandwidth_curve.sh with the flags the JIT uses; prints one
// "bytes_moved gbps" line per footprint (bytes read + bytes written).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main() {
  for (int64_t moved = int64_t{1} << 12; moved <= int64_t{1} << 30; moved *= 4) {
    const int64_t n = moved / 2 / static_cast<int64_t>(sizeof(float));
    std::vector<float> src(static_cast<size_t>(n), 1.0f), dst(static_cast<size_t>(n), 0.0f);
    const int repeats = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 31) / moved, 5, 2000));
    std::vector<double> times;
    for (int r = 0; r < repeats + 2; ++r) {
      auto start = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
      auto stop = std::chrono::steady_clock::now();
      if (r >= 2) times.push_back(std::chrono::duration<double>(stop - start).count());
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    const double median = times[times.size() / 2];
    std::printf("%lld %.2f\n", static_cast<long long>(moved), static_cast<double>(moved) / median / 1e9);
    if (dst[n / 2] != 1.0f) return 1;  // keep the copy observable
  }
  return 0;
}
