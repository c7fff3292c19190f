// One loop nest for every op that walks arrays through strides: elementwise
// with broadcasting, layout copies, reductions. Dims are coalesced first, so
// the common dense case runs as one flat inner loop with no per-element
// index arithmetic beyond an add per operand.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace stitch::interp {

// Offsets into N arrays, in elements.
template <size_t N>
using Offsets = std::array<int64_t, N>;

template <size_t N>
struct StridedNest {
  std::vector<int64_t> extents;  // outermost first
  std::array<std::vector<int64_t>, N> strides;
};

// Drops unit dims and merges neighbours that every operand walks as one
// (stride[d] == stride[d + 1] * extent[d + 1]); the visiting order is unchanged.
template <size_t N>
StridedNest<N> coalesce(const std::vector<int64_t>& extents, const std::array<std::vector<int64_t>, N>& strides) {
  StridedNest<N> nest;
  for (size_t d = 0; d < extents.size(); ++d) {
    if (extents[d] == 1) continue;
    bool merges = !nest.extents.empty();
    for (size_t k = 0; k < N && merges; ++k) {
      merges = nest.strides[k].back() == strides[k][d] * extents[d];
    }
    if (merges) {
      nest.extents.back() *= extents[d];
      for (size_t k = 0; k < N; ++k) nest.strides[k].back() = strides[k][d];
      continue;
    }
    nest.extents.push_back(extents[d]);
    for (size_t k = 0; k < N; ++k) nest.strides[k].push_back(strides[k][d]);
  }
  return nest;
}

// Calls body(offsets) once per index of `extents`, in row-major order, where
// offsets[k] = base[k] + sum_d index[d] * strides[k][d].
template <size_t N, class Body>
void for_each_strided(const std::vector<int64_t>& extents, const std::array<std::vector<int64_t>, N>& strides,
                      Offsets<N> base, Body&& body) {
  for (int64_t e : extents) {
    if (e == 0) return;
  }
  StridedNest<N> nest = coalesce<N>(extents, strides);
  const size_t rank = nest.extents.size();
  if (rank == 0) {
    body(base);
    return;
  }
  const int64_t inner = nest.extents[rank - 1];
  Offsets<N> inner_step;
  for (size_t k = 0; k < N; ++k) inner_step[k] = nest.strides[k][rank - 1];
  std::vector<int64_t> counter(rank - 1, 0);
  Offsets<N> row = base;
  while (true) {
    Offsets<N> at = row;
    for (int64_t i = 0; i < inner; ++i) {
      body(at);
      for (size_t k = 0; k < N; ++k) at[k] += inner_step[k];
    }
    size_t d = rank - 1;
    while (d-- > 0) {
      for (size_t k = 0; k < N; ++k) row[k] += nest.strides[k][d];
      if (++counter[d] < nest.extents[d]) break;
      for (size_t k = 0; k < N; ++k) row[k] -= nest.strides[k][d] * nest.extents[d];
      counter[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// Strides that read an operand of `shape` as if broadcast (numpy rules) to
// `target`: leading missing dims and unit dims get stride 0.
inline std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& shape,
                                              const std::vector<int64_t>& target) {
  std::vector<int64_t> strides(target.size(), 0);
  int64_t s = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t d = shape.size() - 1 - i;
    size_t t = target.size() - 1 - i;
    strides[t] = shape[d] == 1 ? 0 : s;
    s *= shape[d];
  }
  return strides;
}

}  // namespace stitch::interp
