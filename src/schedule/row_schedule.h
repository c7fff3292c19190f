// The row-reduction schedules the lowering implements (docs/lowering.md, Row
// schedules; FusionStitching 2019 §5.2): which threads own a row of a row
// reduction or a stitched group. A plain value with a name and a template text,
// so a plan can say which one it chose and a test can pin it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stitch::schedule {

enum class RowScheduleKind : uint8_t {
  BlockPerRow,      // a block strides over one row, then a block reduction
  WarpPerRow,       // each warp of the block owns a row: a warp (shuffle) reduction, no barrier
  MultiRowPerWarp,  // each segment of `lanes` lanes owns a row: rows shorter than a warp
};

// "block-per-row", "warp-per-row", "multi-row-per-warp": the strategy names
// of the candidate enumeration (candidates.h).
std::string_view row_schedule_kind_name(RowScheduleKind k);
std::optional<RowScheduleKind> parse_row_schedule_kind(std::string_view name);
std::vector<std::string> row_schedule_kind_names();

inline constexpr int64_t kRowScheduleWarpSize = 32;

struct RowSchedule {
  RowScheduleKind kind = RowScheduleKind::BlockPerRow;
  int64_t threads = 256;  // per block, a multiple of 32 (block-per-row: at most; short rows take fewer)
  int64_t lanes = 32;     // multi-row-per-warp: lanes per row, 2..16; 32 otherwise

  // Rows one block owns: 1, warps, or warps x 32 / lanes.
  int64_t rows_per_block() const;
  // The schedule template (template.h) of the candidate it corresponds to:
  // "[GRID,CTA];", "[GRID-WARP_8,CTA];", "[GRID-WARP_8-CTA_4,CTA];".
  std::string template_text() const;
  // "warp-per-row [GRID-WARP_8,CTA]; 256 threads"
  std::string describe() const;

  friend bool operator==(const RowSchedule&, const RowSchedule&) = default;
};

// The threads block-per-row launches for rows of `static_len` elements (-1:
// symbolic) under a schedule of at most `max_threads`: a short static row
// takes the warps it fills, no fewer than one.
int64_t block_per_row_threads(int64_t static_len, int64_t max_threads);

// The lanes a row of `len` elements gets under multi-row-per-warp: the
// smallest power of two >= len, between 2 and 16 (rows of 17..31 elements: 16
// lanes, two steps each); nullopt when len >= 32 or unknown (< 0): such rows
// take a whole warp or more.
std::optional<int64_t> multi_row_lanes(int64_t len);

}  // namespace stitch::schedule
