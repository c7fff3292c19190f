// libFuzzer target for the .npy reader: any byte string must give a tensor or
// a UserError; a tensor that comes back must survive a write/read round trip.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "stitch/error.h"
#include "stitch/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  stitch::Tensor t;
  try {
    t = stitch::parse_npy(bytes, "fuzz.npy");
  } catch (const stitch::UserError&) {
    return 0;
  }
  stitch::Tensor again = stitch::parse_npy(stitch::serialize_npy(t), "round-trip.npy");
  // memcmp on a zero-size tensor would pass a null pointer.
  bool same_bytes = t.nbytes() == 0 || std::memcmp(again.raw(), t.raw(), t.nbytes()) == 0;
  if (again.dtype() != t.dtype() || again.shape() != t.shape() || again.nbytes() != t.nbytes() || !same_bytes) {
    std::abort();
  }
  return 0;
}
