// The tuners' cache files (docs/tuning.md, The tuning cache): read whole, and
// written to a temporary name then renamed, so a reader never sees half a file.
#pragma once

#include <filesystem>
#include <string>

#include "runtime/cpu/kernel_cache.h"
#include "schedule/select.h"

namespace stitch::tune {

// Where the tuners keep their files: `directory`, or "tuning" under the
// kernel cache's directory when it is empty.
std::filesystem::path tuning_directory(const runtime::cpu::KernelCache& kernels, const std::filesystem::path& directory);

// The file's bytes; "" when it cannot be read.
std::string read_cache_file(const std::filesystem::path& p);
// UserError when the directory or file cannot be written.
void write_cache_file(const std::filesystem::path& p, const std::string& text);

// What a measurement depends on besides the group: the target fields that
// change the generated code, and the machine (CPU model and ISA flags).
std::string measured_target_text(const schedule::RowScheduleTarget& t);
// The same fields, on the machine `description` names (a GPU's measurer).
std::string measured_target_text(const schedule::RowScheduleTarget& t, const std::string& description);

}  // namespace stitch::tune
