// The GPU model's profile of one launch as JSON (docs/gpu-model.md, CLI):
// what `stitch ptx run --profile` prints, and what the simulated driver
// hands `stitch bench --backend cuda-sim --profile` for each launch.
#pragma once

#include <nlohmann/json.hpp>

#include "gpu_model/profile.h"

namespace stitch::gpu_model {

nlohmann::ordered_json profile_json(const KernelProfile& profile);

}  // namespace stitch::gpu_model
