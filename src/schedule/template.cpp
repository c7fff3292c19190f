#include "schedule/template.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <optional>

#include "stitch/error.h"

namespace stitch::schedule {

std::string_view level_name(Level l) {
  switch (l) {
    case Level::Grid: return "GRID";
    case Level::Cta: return "CTA";
    case Level::Warp: return "WARP";
    case Level::Thread: return "THREAD";
  }
  STITCH_ASSERT(false, "unknown schedule level");
  return "";
}

bool DimAttr::has(Level l) const {
  for (const Tile& t : tiles)
    if (t.level == l) return true;
  return false;
}

bool Schedule::has(Level l) const {
  for (const DimAttr& d : dims)
    if (d.has(l)) return true;
  return false;
}

namespace {

class TemplateParser {
 public:
  TemplateParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  ScheduleTemplate parse() {
    ScheduleTemplate t;
    skip_blanks();
    if (at_end()) fail("empty template: expected a schedule such as [GRID,CTA];");
    while (!at_end()) {
      t.schedules.push_back(schedule());
      skip_blanks();
    }
    return t;
  }

 private:
  Schedule schedule() {
    Schedule s;
    if (is_word_start(peek())) s.op = word();
    skip_blanks();
    expect('[', s.op.empty() ? "expected '[' or an op name to start a schedule" : "expected '[' after the op name");
    skip_blanks();
    s.dims.push_back(attr());
    for (skip_blanks(); peek() == ','; skip_blanks()) {
      ++pos_;
      skip_blanks();
      s.dims.push_back(attr());
    }
    expect(']', "expected ',', '-' or ']' after an attribute");
    skip_blanks();
    if (peek() == 'S') {
      ++pos_;
      s.shared = true;
      skip_blanks();
    }
    expect(';', "expected ';' to end the schedule");
    return s;
  }

  DimAttr attr() {
    DimAttr a;
    a.tiles.push_back(tile());
    for (skip_blanks(); peek() == '-'; skip_blanks()) {
      ++pos_;
      skip_blanks();
      a.tiles.push_back(tile());
    }
    return a;
  }

  Tile tile() {
    const size_t start = pos_;
    if (!is_word_start(peek())) fail("expected an attribute: GRID, CTA, WARP or THREAD");
    // A level ends at '_' (its tile size follows), so read letters only.
    std::string name;
    while (std::isalpha(static_cast<unsigned char>(peek()))) name += text_[pos_++];
    Tile t;
    std::optional<Level> level = parse_level(name);
    if (!level) {
      pos_ = start;
      fail(fmt::format("unknown attribute '{}': expected GRID, CTA, WARP or THREAD", name));
    }
    t.level = *level;
    if (peek() != '_') return t;
    ++pos_;
    if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("expected a tile size after '_'");
    const size_t digits = pos_;
    int64_t size = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      if (size > (int64_t{1} << 40)) {
        pos_ = digits;
        fail("tile size is too large");
      }
      size = size * 10 + (text_[pos_++] - '0');
    }
    if (size == 0) {
      pos_ = digits;
      fail("tile size must be positive");
    }
    t.size = size;
    return t;
  }

  static std::optional<Level> parse_level(std::string_view w) {
    if (w == "GRID") return Level::Grid;
    if (w == "CTA") return Level::Cta;
    if (w == "WARP") return Level::Warp;
    if (w == "THREAD") return Level::Thread;
    return std::nullopt;
  }

  std::string word() {
    std::string w;
    while (is_word_char(peek())) w += text_[pos_++];
    return w;
  }

  static bool is_word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
  static bool is_word_char(char c) { return is_word_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '.'; }

  void skip_blanks() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void expect(char c, const std::string& message) {
    if (peek() != c) fail(message);
    ++pos_;
  }

  [[noreturn]] void fail(const std::string& message) const {
    SourceLoc loc{source_, 1, 1};
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++loc.line;
        loc.col = 1;
      } else {
        ++loc.col;
      }
    }
    throw UserError(message, loc);
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
};

}  // namespace

ScheduleTemplate parse_template(std::string_view text, const std::string& source) {
  return TemplateParser(text, source).parse();
}

std::string print_attr(const DimAttr& a) {
  std::string out;
  for (size_t i = 0; i < a.tiles.size(); ++i) {
    if (i) out += '-';
    out += level_name(a.tiles[i].level);
    if (a.tiles[i].sized()) out += fmt::format("_{}", a.tiles[i].size);
  }
  return out;
}

std::string print_schedule(const Schedule& s) {
  std::string out = s.op + "[";
  for (size_t i = 0; i < s.dims.size(); ++i) {
    if (i) out += ',';
    out += print_attr(s.dims[i]);
  }
  out += s.shared ? "]S;" : "];";
  return out;
}

std::string print_template(const ScheduleTemplate& t) {
  std::string out;
  for (size_t i = 0; i < t.schedules.size(); ++i) {
    if (i) out += ' ';
    out += print_schedule(t.schedules[i]);
  }
  return out;
}

namespace {

// The rules of docs/schedule.md, Validation, on one dimension.
std::string dim_problem(const DimAttr& a, size_t d, const LoopDim& dim) {
  const std::string attr = print_attr(a);
  if (a.tiles.empty()) return fmt::format("dim {}: the attribute has no tile", d);
  int64_t inner = 1;  // product of every tile but the outermost
  for (size_t i = 0; i < a.tiles.size(); ++i) {
    const Tile& t = a.tiles[i];
    if (t.size < 0) return fmt::format("dim {}: tile {} has a negative size", d, level_name(t.level));
    for (size_t j = 0; j < i; ++j) {
      if (a.tiles[j].level == t.level)
        return fmt::format("dim {}: {} appears twice in {}; merge the two tiles into one", d, level_name(t.level), attr);
    }
    if (i > 0 && !t.sized())
      return fmt::format("dim {}: only the outermost tile of {} may omit its size", d, attr);
    if (i > 0) inner *= t.size;
  }
  if (dim.reduced && a.has(Level::Grid))
    return fmt::format("dim {} is reduced and cannot be split across blocks ({}): combining the blocks' partial "
                       "results needs another kernel",
                       d, attr);
  if (dim.extent < 0) return "";
  if (a.tiles.front().sized()) {
    const int64_t covered = inner * a.tiles.front().size;
    if (covered != dim.extent)
      return fmt::format("dim {}: {} covers {} iterations but the extent is {}; sized tiles must multiply to the "
                         "extent (leave the outermost tile unsized to cover the rest)",
                         d, attr, covered, dim.extent);
  } else if (inner > dim.extent) {
    return fmt::format("dim {}: the inner tiles of {} cover {} iterations but the extent is {}", d, attr, inner,
                       dim.extent);
  }
  return "";
}

// Elements of the result one block writes: reduced dims contribute 1, a dim
// with a GRID tile what one block's share of it is, any other dim its extent.
std::optional<int64_t> block_result_elements(const Schedule& s, const OpDomain& op) {
  int64_t elements = 1;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (op.dims[d].reduced) continue;
    const DimAttr& a = s.dims[d];
    int64_t share = op.dims[d].extent;
    for (size_t i = 0; i < a.tiles.size(); ++i) {
      if (a.tiles[i].level != Level::Grid) continue;
      share = 1;
      for (size_t j = i + 1; j < a.tiles.size(); ++j) share *= a.tiles[j].size;
    }
    if (share < 0) return std::nullopt;
    elements *= share;
  }
  return elements;
}

}  // namespace

std::string schedule_problem(const Schedule& s, const OpDomain& op, const ScheduleLimits& limits) {
  if (s.dims.size() != op.dims.size())
    return fmt::format("{} has {} attributes but {} has {} loop dimensions; give one attribute per dimension",
                       print_schedule(s), s.dims.size(), op.name, op.dims.size());
  for (size_t d = 0; d < s.dims.size(); ++d) {
    std::string p = dim_problem(s.dims[d], d, op.dims[d]);
    if (!p.empty()) return p;
  }
  // The launch picks one block extent: at most one CTA and one WARP tile may
  // leave it open (the paper's [GRID,CTA,CTA,THREAD] is [GRID,CTA_4,CTA,THREAD] here).
  int unsized_cta = 0, unsized_warp = 0;
  int64_t cta_threads = 1, warps = 1;
  for (const DimAttr& a : s.dims) {
    for (const Tile& t : a.tiles) {
      int64_t& product = t.level == Level::Cta ? cta_threads : warps;
      int& unsized = t.level == Level::Cta ? unsized_cta : unsized_warp;
      if (t.level != Level::Cta && t.level != Level::Warp) continue;
      if (t.sized()) {
        product *= t.size;
      } else {
        ++unsized;
      }
    }
  }
  if (unsized_cta > 1 || unsized_warp > 1)
    return fmt::format("{} leaves the size of more than one {} tile open; give all but one a size",
                       print_schedule(s), unsized_cta > 1 ? "CTA" : "WARP");
  if (s.has(Level::Warp)) {
    if (cta_threads > limits.warp_size || limits.warp_size % cta_threads != 0)
      return fmt::format("the CTA tiles of {} spread {} threads over the lanes of a warp; they must multiply to a "
                         "divisor of the warp size {}",
                         print_schedule(s), cta_threads, limits.warp_size);
    if (warps * limits.warp_size > limits.max_block_threads)
      return fmt::format("{} puts {} warps of {} threads in a block; the limit is {} threads", print_schedule(s),
                         warps, limits.warp_size, limits.max_block_threads);
  } else if (cta_threads > limits.max_block_threads) {
    return fmt::format("the CTA tiles of {} put {} threads in a block; the limit is {}", print_schedule(s),
                       cta_threads, limits.max_block_threads);
  }
  if (s.shared) {
    std::optional<int64_t> elements = block_result_elements(s, op);
    if (!elements)
      return fmt::format("{} caches its result in shared memory (S) but a symbolic dimension leaves one block's "
                         "share unbounded",
                         print_schedule(s));
    const int64_t bytes = *elements * op.element_bytes;
    if (bytes > limits.shared_bytes_per_block)
      return fmt::format("{} caches {} bytes per block in shared memory ({} elements x {} bytes); the limit is {}",
                         print_schedule(s), bytes, *elements, op.element_bytes, limits.shared_bytes_per_block);
  }
  return "";
}

std::string template_problem(const ScheduleTemplate& t, const std::vector<OpDomain>& ops,
                             const ScheduleLimits& limits) {
  if (t.schedules.size() != ops.size())
    return fmt::format("the template has {} schedules but {} ops write shared or global memory; give one schedule "
                       "per op",
                       t.schedules.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const Schedule& s = t.schedules[i];
    if (!s.op.empty() && s.op != ops[i].name)
      return fmt::format("schedule {} names {} but implements {}", i, s.op, ops[i].name);
    std::string p = schedule_problem(s, ops[i], limits);
    if (!p.empty()) return fmt::format("schedule {} ({}): {}", i, ops[i].name, p);
  }
  return "";
}

void validate_template(const ScheduleTemplate& t, const std::vector<OpDomain>& ops, const ScheduleLimits& limits) {
  std::string p = template_problem(t, ops, limits);
  if (!p.empty()) throw UserError(p);
}

}  // namespace stitch::schedule
