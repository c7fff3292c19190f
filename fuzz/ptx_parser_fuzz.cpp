// libFuzzer target: the PTX parser must turn any bytes into either a
// ptx::Module or a located UserError, and the printer must be a fixed point
// on whatever parses (docs/ptx.md, Fuzzing). Every parsed function's CFG is
// built too: a bad branch target is a located UserError, nothing else.
// A finding is a crash, a sanitizer report, an escaping InternalError or
// other exception, a UserError without a line and column, printed text that
// does not parse, or print(parse(print(x))) != print(x).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ptx/cfg.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "ptx_parser_fuzz: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void build_cfgs(const stitch::ptx::Module& m) {
  for (const auto& item : m.items) {
    const auto* f = std::get_if<stitch::ptx::Function>(&item);
    if (f == nullptr || !f->has_body) continue;
    try {
      stitch::ptx::print_cfg(stitch::ptx::build_cfg(*f));
    } catch (const stitch::UserError& e) {
      if (!e.loc().known()) finding("CFG UserError without a location", e.formatted());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  stitch::ptx::Module first;
  try {
    first = stitch::ptx::parse_module(text, "fuzz.ptx");
  } catch (const stitch::UserError& e) {
    if (!e.loc().known() || e.loc().file != "fuzz.ptx") finding("UserError without a location", e.formatted());
    return 0;
  }
  build_cfgs(first);
  std::string printed = stitch::ptx::print_module(first);
  stitch::ptx::Module second;
  try {
    second = stitch::ptx::parse_module(printed, "printed.ptx");
  } catch (const stitch::UserError& e) {
    finding("printed module does not parse", e.formatted() + "\n" + printed);
  }
  std::string again = stitch::ptx::print_module(second);
  if (again != printed) finding("print is not a fixed point", printed + "---\n" + again);
  return 0;
}
