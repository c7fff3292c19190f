// The GPU model's profile of one launch as JSON (docs/gpu-model.md, CLI):
// what `stitch ptx run --profile` prints and `stitch bench --profile` puts
// in each row's per-kernel breakdown.
#pragma once

#include <nlohmann/json.hpp>

#include "gpu_model/profile.h"

namespace stitch::cli {

nlohmann::ordered_json profile_json(const gpu_model::KernelProfile& profile);

// The target named by --profile; UserError (exit 2) naming the known ones.
gpu_model::GpuTarget profile_target(const std::string& name);

}  // namespace stitch::cli
