// Schedule templates in the FusionStitching grammar (paper 2019, §5.2;
// docs/schedule.md): one schedule per op that writes shared or global memory,
// one attribute per loop dimension of that op, `S` when the result is cached
// in shared memory. Templates are values (STYLE.md §6): they parse, print and
// compare, so tests pin them as text.
//
//   template  ::= schedule+                      (whitespace between tokens)
//   schedule  ::= [identifier] '[' attr (',' attr)* ']' ['S'] ';'
//   attr      ::= part ('-' part)*               (outermost part first)
//   part      ::= level ['_' integer]
//   level     ::= 'GRID' | 'CTA' | 'WARP' | 'THREAD'
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stitch::schedule {

// Where the iterations of one loop dimension (or of one tile of it) run.
enum class Level : uint8_t {
  Grid,    // across thread blocks
  Cta,     // across the threads of a block (the lanes of a warp when the schedule also has WARP)
  Warp,    // across the warps of a block: each warp owns its iterations
  Thread,  // sequentially inside one thread: no parallelism (paper §5.2)
};

std::string_view level_name(Level l);

// One tile of a dimension: `level` runs `size` iterations, or covers what the
// other tiles leave when size is 0 (written without `_N`).
struct Tile {
  Level level = Level::Grid;
  int64_t size = 0;

  bool sized() const { return size > 0; }
  bool operator==(const Tile&) const = default;
};

// The attribute of one loop dimension: its tiles, outermost first.
struct DimAttr {
  std::vector<Tile> tiles;

  bool has(Level l) const;
  bool operator==(const DimAttr&) const = default;
};

struct Schedule {
  std::string op;  // the op it implements; empty when the text names none
  std::vector<DimAttr> dims;
  bool shared = false;  // `S`: the result is cached in shared memory

  bool has(Level l) const;
  bool operator==(const Schedule&) const = default;
};

struct ScheduleTemplate {
  std::vector<Schedule> schedules;

  bool operator==(const ScheduleTemplate&) const = default;
};

// Throws UserError located at `source`:1:column (line:column when the text
// spans lines) naming what was expected.
ScheduleTemplate parse_template(std::string_view text, const std::string& source = "<template>");

// Canonical text: no blank inside a schedule, one blank between schedules:
// "reduce_1[GRID_128-WARP_2,WARP,WARP,CTA]S; [GRID,CTA];". print_template of
// parse_template of canonical text gives the text back.
std::string print_schedule(const Schedule& s);
std::string print_template(const ScheduleTemplate& t);
std::string print_attr(const DimAttr& a);

// The iteration domain of one op: one entry per loop dimension.
struct LoopDim {
  int64_t extent = -1;   // -1 when symbolic: extent rules are not checked
  bool reduced = false;  // a reduction dimension of the op
};

struct OpDomain {
  std::string name;
  std::vector<LoopDim> dims;
  int64_t element_bytes = 4;  // of the result, for the `S` footprint
};

// The device limits validation needs (a GpuTarget provides them; these
// defaults are CUDA's for every compute capability since 2.0, and the static
// shared memory a block gets without opting in).
struct ScheduleLimits {
  int64_t warp_size = 32;
  int64_t max_block_threads = 1024;
  int64_t shared_bytes_per_block = 48 * 1024;
};

// Why `s` cannot implement `op`, or "" when it can. docs/schedule.md,
// Validation, lists every rule with its reason.
std::string schedule_problem(const Schedule& s, const OpDomain& op, const ScheduleLimits& limits = {});

// Why `t` cannot implement the ops (one schedule per op, in order), or "".
// A problem names the schedule by index ("schedule 1 (reduce_1): ...").
std::string template_problem(const ScheduleTemplate& t, const std::vector<OpDomain>& ops,
                             const ScheduleLimits& limits = {});

// template_problem as a UserError.
void validate_template(const ScheduleTemplate& t, const std::vector<OpDomain>& ops, const ScheduleLimits& limits = {});

}  // namespace stitch::schedule
