#include "runtime/common/caller_memory.h"

#include <cstring>

namespace stitch::runtime {

std::vector<Tensor> tensors_of(const std::vector<ArrayView>& views) {
  std::vector<Tensor> out;
  out.reserve(views.size());
  for (const ArrayView& v : views) {
    Tensor t = Tensor::uninitialized(v.dtype, std::vector<int64_t>(v.shape, v.shape + v.rank));
    if (t.nbytes() > 0) std::memcpy(t.raw(), v.data, t.nbytes());
    out.push_back(std::move(t));
  }
  return out;
}

void copy_outputs(const std::vector<Tensor>& outputs, const OutputMemory& output) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::byte* to = output(i, outputs[i].dtype(), outputs[i].shape());
    if (outputs[i].nbytes() > 0) std::memcpy(to, outputs[i].raw(), outputs[i].nbytes());
  }
}

}  // namespace stitch::runtime
