// Two kinds of failure (STYLE.md §7): a UserError is a checked condition on the
// user's input and ends with exit status 2; an InternalError is a broken
// invariant inside Stitch and names the file and line that caught it.
#pragma once

#include <stdexcept>
#include <string>

namespace stitch {

struct SourceLoc {
  std::string file;
  int line = 0;  // 1-based; 0 means "no location"
  int col = 0;   // 1-based

  bool known() const { return line > 0; }
};

class UserError : public std::runtime_error {
 public:
  explicit UserError(std::string message, SourceLoc loc = {})
      : std::runtime_error(std::move(message)), loc_(std::move(loc)) {}

  const SourceLoc& loc() const { return loc_; }
  // Attaches a location when the error does not carry one yet.
  UserError located(const SourceLoc& loc) const {
    return loc_.known() ? *this : UserError(what(), loc);
  }
  // "file:line:col: error: message", or "error: message" without a location.
  std::string formatted() const;

 private:
  SourceLoc loc_;
};

class InternalError : public std::logic_error {
 public:
  InternalError(const std::string& message, const char* file, int line);
};

[[noreturn]] void fail_internal(const std::string& message, const char* file, int line);

}  // namespace stitch

// Internal invariant: a failure is a bug in Stitch, never the user's input.
#define STITCH_ASSERT(cond, msg)                                     \
  do {                                                               \
    if (!(cond)) ::stitch::fail_internal((msg), __FILE__, __LINE__); \
  } while (0)
