#include "schedule/group_schedule.h"

#include <fmt/format.h>

#include <functional>

namespace stitch::schedule {

std::string_view schedule_kind_name(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::Loop: return "loop";
    case ScheduleKind::TransposeTiles: return "transpose-tiles";
    case ScheduleKind::Row: return "row";
    case ScheduleKind::Column: return "column";
    case ScheduleKind::Tile: return "tile";
    case ScheduleKind::Library: return "library";
    case ScheduleKind::Unlowered: return "unlowered";
  }
  return "?";
}

std::string GroupSchedule::key() const {
  std::string text(schedule_kind_name(kind));
  if (kind == ScheduleKind::Row) text += " " + row.describe();
  if (kind == ScheduleKind::Column) text += " " + column.describe();
  if (prefetch) text += " prefetch";
  if (!cached.empty()) {
    text += " cached [";
    for (size_t i = 0; i < cached.size(); ++i) text += (i ? " " : "") + std::to_string(cached[i]);
    text += "]";
  }
  if (shared_bytes > 0) text += fmt::format(" shared {}", shared_bytes);
  if (!held.empty()) {
    text += " held [";
    for (size_t i = 0; i < held.size(); ++i) text += (i ? " " : "") + std::to_string(held[i]);
    text += "]";
    if (held_vector > 1) text += fmt::format(" vector {}", held_vector);
  }
  if (!streamed.empty()) {
    text += " streamed [";
    for (size_t i = 0; i < streamed.size(); ++i) text += (i ? " " : "") + std::to_string(streamed[i]);
    text += "]";
  }
  return text;
}

std::string GroupSchedule::describe() const { return reason.empty() ? key() : key() + " (" + reason + ")"; }

size_t GroupSchedule::hash() const { return std::hash<std::string>{}(key()); }

}  // namespace stitch::schedule
