// libFuzzer target for the kernel language (docs/kernel-language.md): bytes
// are tokenized and read as a sequence of kernels by the kernel parser, and
// each parsed kernel goes through the checker. Every input must end in
// checked kernels or a UserError with a location. Anything else is a finding:
// a crash, a sanitizer report, an InternalError or other exception escaping,
// a UserError without a location, or a checked kernel whose printed text does
// not parse and check back to the same kernel, or prints differently again.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "kernel_lang/parser.h"
#include "ir/lexer.h"
#include "stitch/kernel.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "kernel_lang_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Every kernel of `text`, parsed and checked; stops at the first token that
// does not start a kernel.
std::vector<stitch::UserKernel> parse_kernels(const std::string& text, const std::string& file) {
  stitch::SourceFile source(file);
  std::vector<stitch::Token> tokens = stitch::tokenize(text, file);
  std::vector<stitch::UserKernel> kernels;
  size_t pos = 0;
  while (tokens[pos].kind == stitch::TokenKind::Ident && tokens[pos].text == "kernel") {
    kernels.push_back(stitch::parse_kernel_tokens(tokens, pos, source));
    stitch::check_kernel(kernels.back());
  }
  return kernels;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<stitch::UserKernel> first;
  try {
    first = parse_kernels(text, "fuzz.stitch");
  } catch (const stitch::UserError& e) {
    if (!e.loc().known() || e.loc().file != "fuzz.stitch") finding("UserError without a location", e.formatted());
    return 0;
  } catch (const stitch::InternalError& e) {
    finding("InternalError escaped", e.what());
  } catch (const std::exception& e) {
    finding("exception escaped", e.what());
  }
  std::string printed;
  for (const stitch::UserKernel& k : first) printed += stitch::print_kernel(k) + "\n";
  std::vector<stitch::UserKernel> second;
  try {
    second = parse_kernels(printed, "printed.stitch");
  } catch (const stitch::UserError& e) {
    finding("printed kernels do not parse", e.formatted() + "\n" + printed);
  }
  if (second.size() != first.size()) finding("printed text lost kernels", printed);
  std::string again;
  for (size_t i = 0; i < first.size(); ++i) {
    if (!stitch::same_kernel(first[i], second[i])) {
      finding("round trip changed a kernel", printed + "---\n" + stitch::print_kernel(second[i]));
    }
    again += stitch::print_kernel(second[i]) + "\n";
  }
  if (again != printed) finding("print is not a fixed point", printed + "---\n" + again);
  return 0;
}
