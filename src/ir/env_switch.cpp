#include "ir/env_switch.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "stitch/error.h"

namespace stitch {

bool env_switch(const char* name, bool default_value) {
  const char* env = std::getenv(name);
  if (!env || !*env) return default_value;
  const std::string value = env;
  if (value != "0" && value != "1") throw UserError(fmt::format("{}={}: not 0 or 1", name, env));
  return value == "1";
}

}  // namespace stitch
