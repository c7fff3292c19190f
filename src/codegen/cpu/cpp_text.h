// How Kernel IR types, literals, ops and casts are spelled in the generated
// C++ (docs/cpu-backend.md, Mapping): the CPU's side of the text interface
// (codegen/common/c_text.h), each rule a helper of stitch_cpu_runtime.h, a
// std:: function or a C operator.
#pragma once

#include "codegen/common/c_text.h"

namespace stitch::codegen::cpu {

const common::TargetText& cpp_text();

}  // namespace stitch::codegen::cpu
