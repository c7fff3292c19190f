// The indented text both emitters write kernels into: one statement a line,
// two spaces a nesting level, as the golden tests pin it.
#pragma once

#include <string>

namespace stitch::codegen::common {

class SourceWriter {
 protected:
  void line(const std::string& text) {
    out_.append(static_cast<size_t>(depth_) * 2, ' ');
    out_ += text;
    out_ += '\n';
  }

  std::string out_;
  int depth_ = 0;
};

}  // namespace stitch::codegen::common
