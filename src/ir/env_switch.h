// On/off switches read from the environment (STITCH_PREFETCH,
// STITCH_HUGE_PAGES; docs/cli.md): unset or empty is the default, "0" off,
// "1" on; anything else is bad input.
#pragma once

namespace stitch {

// The switch `name`; throws UserError "NAME=VALUE: not 0 or 1" on any other value.
bool env_switch(const char* name, bool default_value);

}  // namespace stitch
