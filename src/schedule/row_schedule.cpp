#include "schedule/row_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>

namespace stitch::schedule {

std::string_view row_schedule_kind_name(RowScheduleKind k) {
  switch (k) {
    case RowScheduleKind::BlockPerRow: return "block-per-row";
    case RowScheduleKind::WarpPerRow: return "warp-per-row";
    case RowScheduleKind::MultiRowPerWarp: return "multi-row-per-warp";
  }
  return "";
}

std::optional<RowScheduleKind> parse_row_schedule_kind(std::string_view name) {
  for (RowScheduleKind k : {RowScheduleKind::BlockPerRow, RowScheduleKind::WarpPerRow, RowScheduleKind::MultiRowPerWarp}) {
    if (row_schedule_kind_name(k) == name) return k;
  }
  return std::nullopt;
}

std::vector<std::string> row_schedule_kind_names() {
  return {"block-per-row", "warp-per-row", "multi-row-per-warp"};
}

int64_t RowSchedule::rows_per_block() const {
  const int64_t warps = threads / kRowScheduleWarpSize;
  switch (kind) {
    case RowScheduleKind::BlockPerRow: return 1;
    case RowScheduleKind::WarpPerRow: return warps;
    case RowScheduleKind::MultiRowPerWarp: return warps * (kRowScheduleWarpSize / lanes);
  }
  return 1;
}

std::string RowSchedule::template_text() const {
  const int64_t warps = threads / kRowScheduleWarpSize;
  switch (kind) {
    case RowScheduleKind::BlockPerRow: return "[GRID,CTA];";
    case RowScheduleKind::WarpPerRow: return fmt::format("[GRID-WARP_{},CTA];", warps);
    case RowScheduleKind::MultiRowPerWarp:
      return fmt::format("[GRID-WARP_{}-CTA_{},CTA];", warps, kRowScheduleWarpSize / lanes);
  }
  return "";
}

std::string RowSchedule::describe() const {
  std::string text = fmt::format("{} {} {} threads", row_schedule_kind_name(kind), template_text(), threads);
  if (kind == RowScheduleKind::MultiRowPerWarp) text += fmt::format(", {} lanes per row", lanes);
  return text;
}

std::optional<int64_t> multi_row_lanes(int64_t len) {
  if (len < 0 || len >= kRowScheduleWarpSize) return std::nullopt;
  const int64_t lanes = static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(len, 2))));
  return std::min(lanes, kRowScheduleWarpSize / 2);
}

int64_t block_per_row_threads(int64_t static_len, int64_t max_threads) {
  if (static_len < 0) return max_threads;
  return std::clamp<int64_t>((static_len + kRowScheduleWarpSize - 1) / kRowScheduleWarpSize * kRowScheduleWarpSize,
                             kRowScheduleWarpSize, max_threads);
}

}  // namespace stitch::schedule
