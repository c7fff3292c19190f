#include "lower/streaming_outputs.h"

#include <set>

namespace stitch::lower {

void mark_streaming_outputs(const Graph& g, const FusionPlan& plan, std::vector<LoweredGroup>& lowered,
                            int64_t min_bytes) {
  std::set<ValueId> graph_outputs;
  for (const GraphOutput& o : g.outputs()) graph_outputs.insert(o.value);
  // The groups that read each value from memory (a buffer parameter of
  // theirs); a group that recomputes a producer does not count.
  std::vector<std::set<int>> readers(static_cast<size_t>(g.num_values()));
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    for (ValueId v : loop_group_signature(g, plan.groups[gi]).inputs) {
      readers[static_cast<size_t>(v.index)].insert(static_cast<int>(gi));
    }
  }
  for (LoweredGroup& l : lowered) {
    if (!l.kernel) continue;
    const size_t first_output = l.signature.inputs.size();
    for (size_t k = 0; k < l.signature.outputs.size(); ++k) {
      const ValueId v = l.signature.outputs[k];
      const TensorType& t = g.type(v);
      if (!graph_outputs.count(v) || !is_static(t.shape)) continue;
      bool read_elsewhere = false;
      for (int reader : readers[static_cast<size_t>(v.index)]) read_elsewhere = read_elsewhere || reader != l.group;
      if (read_elsewhere) continue;
      int64_t bytes = dtype_size(t.dtype);
      for (const Dim& d : t.shape) bytes *= d.extent();
      kir::BufferParam& b = l.kernel->buffers.at(first_output + k);
      if (bytes >= min_bytes && b.access == kir::Access::Write) b.streaming = true;
    }
  }
}

}  // namespace stitch::lower
