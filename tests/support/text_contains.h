// Whether a text (generated code, a command's output) contains a fragment: the
// emitter tests that look for a line of code share it.
#pragma once

#include <string_view>

namespace stitch::testing {

inline bool contains(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

}  // namespace stitch::testing
