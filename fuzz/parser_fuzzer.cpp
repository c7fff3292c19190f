// libFuzzer target: the text parser must turn any bytes into either a Module
// or a located UserError. Anything else is a finding: a crash, a sanitizer
// report, an InternalError (or any other exception) escaping, a UserError
// without a line and column, or a parsed module whose printed text does not
// parse back to an equal module and print identically (DESIGN.md, Testing).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "stitch/text.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "parser_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  stitch::Module first;
  try {
    first = stitch::parse_module(text, "fuzz.stitch");
  } catch (const stitch::UserError& e) {
    if (!e.loc().known() || e.loc().file != "fuzz.stitch") finding("UserError without a location", e.formatted());
    return 0;
  }
  std::string printed = stitch::print_module(first);
  stitch::Module second;
  try {
    second = stitch::parse_module(printed, "printed.stitch");
  } catch (const stitch::UserError& e) {
    finding("printed module does not parse", e.formatted() + "\n" + printed);
  }
  if (first.graphs.size() != second.graphs.size()) finding("printed module lost graphs", printed);
  for (size_t i = 0; i < first.graphs.size(); ++i) {
    if (first.graphs[i] != second.graphs[i]) {
      finding("round trip changed a graph", printed + "---\n" + stitch::print_graph(second.graphs[i]));
    }
  }
  if (first.kernels.size() != second.kernels.size()) finding("printed module lost kernels", printed);
  for (size_t i = 0; i < first.kernels.size(); ++i) {
    if (!stitch::same_kernel(first.kernels[i], second.kernels[i])) {
      finding("round trip changed a kernel", printed + "---\n" + stitch::print_kernel(second.kernels[i]));
    }
  }
  std::string again = stitch::print_module(second);
  if (again != printed) finding("print is not a fixed point", printed + "---\n" + again);
  return 0;
}
