// What a kernel holds on an SM: registers, spills and static shared memory
// as ptxas -v reports them (occupancy from them: schedule::occupancy).
#pragma once

#include <string>

namespace stitch::gpu_model {

// What ptxas -v reports for one kernel.
struct KernelResources {
  bool known = false;  // ptxas ran and reported this kernel
  int registers = 0;   // per thread
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_frame_bytes = 0;
  int static_shared_bytes = 0;  // "bytes smem"
  std::string source;           // the ptxas command that reported it, or why unknown
};

// Parses ptxas -v output (stderr and stdout together) for `kernel`, a PTX
// entry name as ptxas prints it (mangled if the PTX is). known=false, with
// the reason in `source`, when the output has no "Used N registers" line for it.
KernelResources parse_ptxas_verbose(const std::string& output, const std::string& kernel);

// Runs ptxas -v -arch=`arch` on `ptx_text` (a scratch file in a fresh
// temporary directory, removed afterwards) and parses its report for
// `kernel`. known=false with the reason when the build found no ptxas.
// Throws UserError carrying ptxas's output when ptxas rejects the PTX.
KernelResources ptxas_resources(const std::string& ptx_text, const std::string& kernel, const std::string& arch);

}  // namespace stitch::gpu_model
