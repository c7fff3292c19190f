#include "stitch/error.h"

#include <fmt/format.h>

namespace stitch {

std::string UserError::formatted() const {
  if (!loc_.known()) {
    return loc_.file.empty() ? fmt::format("error: {}", what())
                             : fmt::format("{}: error: {}", loc_.file.str(), what());
  }
  return fmt::format("{}:{}:{}: error: {}", loc_.file.str(), loc_.line, loc_.col, what());
}

InternalError::InternalError(const std::string& message, const char* file, int line)
    : std::logic_error(fmt::format("internal error at {}:{}: {}", file, line, message)) {}

void fail_internal(const std::string& message, const char* file, int line) {
  throw InternalError(message, file, line);
}

}  // namespace stitch
