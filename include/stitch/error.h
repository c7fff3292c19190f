// Two kinds of failure (STYLE.md §7): a UserError is a checked condition on the
// user's input and ends with exit status 2; an InternalError is a broken
// invariant inside Stitch and names the file and line that caught it.
#pragma once

#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>

namespace stitch {

// A source file's name, shared by every location in the file: each node keeps
// its location through every graph pass, and copying one costs a reference
// count, not a string (a 100,000-node graph copies its nodes a few times
// while it is canonicalized).
class SourceFile {
 public:
  SourceFile() = default;
  // Implicit, so that a location reads SourceLoc{path, line, col}.
  SourceFile(std::string name) : name_(std::make_shared<const std::string>(std::move(name))) {}
  SourceFile(const char* name) : SourceFile(std::string(name)) {}

  const std::string& str() const {
    static const std::string kNone;
    return name_ ? *name_ : kNone;
  }
  bool empty() const { return str().empty(); }
  friend bool operator==(const SourceFile& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const SourceFile& a, const char* b) { return a.str() == b; }
  friend std::ostream& operator<<(std::ostream& out, const SourceFile& f) { return out << f.str(); }

 private:
  std::shared_ptr<const std::string> name_;
};

struct SourceLoc {
  SourceFile file;
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
