#include "codegen/cpu/repeated_kernels.h"

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace stitch::codegen::cpu {
namespace {

bool identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The names the graph chose, each with the spelling of its role and position:
// the kernel's, then its buffers', then its scalars'.
std::vector<std::pair<std::string, std::string>> chosen_names(const kir::Kernel& kernel) {
  std::vector<std::pair<std::string, std::string>> names;
  names.emplace_back(kernel.name, "stitch_same_k__");
  for (size_t i = 0; i < kernel.buffers.size(); ++i) names.emplace_back(kernel.buffers[i].name, fmt::format("stitch_same_b{}__", i));
  for (size_t i = 0; i < kernel.scalars.size(); ++i) names.emplace_back(kernel.scalars[i].name, fmt::format("stitch_same_s{}__", i));
  return names;
}

// A token renamed when it is a chosen name, or a buffer's name with a suffix the
// emitter derives from it (its narrow floats' `_words` and `_shift`); any other
// token unchanged.
std::string renamed(std::string_view token, const std::vector<std::pair<std::string, std::string>>& names,
                    size_t buffers_end) {
  for (const auto& n : names) {
    if (token == n.first) return n.second;
  }
  for (size_t i = 1; i < buffers_end; ++i) {
    const std::string& name = names[i].first;
    if (token.size() > name.size() && token.substr(0, name.size()) == name) {
      const std::string_view rest = token.substr(name.size());
      if (rest == "_words" || rest == "_shift") return names[i].second + std::string(rest);
    }
  }
  return std::string(token);
}

bool whole_line_comment(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t");
  return first != std::string_view::npos && line.substr(first, 2) == "//";
}

}  // namespace

std::string code_identity(const kir::Kernel& kernel, std::string_view text) {
  const auto names = chosen_names(kernel);
  std::string out;
  out.reserve(text.size());
  size_t line_start = 0;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    const std::string_view line = text.substr(line_start, line_end - line_start);
    line_start = line_end + 1;
    if (whole_line_comment(line)) continue;
    for (size_t i = 0; i < line.size();) {
      // A digit run with letters (1.5e-01f, 4LL) is a literal, not a name.
      if (std::isdigit(static_cast<unsigned char>(line[i]))) {
        while (i < line.size() && (identifier_char(line[i]) || line[i] == '.')) out += line[i++];
        continue;
      }
      if (!identifier_start(line[i])) {
        out += line[i++];
        continue;
      }
      size_t end = i;
      while (end < line.size() && identifier_char(line[end])) ++end;
      out += renamed(line.substr(i, end - i), names, kernel.buffers.size() + 1);
      i = end;
    }
    out += '\n';
  }
  return out;
}

std::string alias_definition(const std::string& name, const std::string& same_as) {
  return fmt::format(
      "// {0}: the same code as {1} (docs/cpu-backend.md, Repeated kernels)\n"
      "extern \"C\" void {0}(void* const* stitch_buffers, const int64_t* stitch_scalars) __attribute__((alias(\"{1}\")));\n",
      name, same_as);
}

}  // namespace stitch::codegen::cpu
