#include "lower/streaming_outputs.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "lower/lower_loop_group.h"

namespace stitch::lower {

std::vector<std::vector<int>> streaming_outputs(const Graph& g, const FusionPlan& plan, int64_t min_bytes) {
  std::set<ValueId> graph_outputs;
  for (const GraphOutput& o : g.outputs()) graph_outputs.insert(o.value);
  // The groups that read each value from memory (a buffer parameter of
  // theirs); a group that recomputes a producer does not count.
  std::vector<std::set<int>> readers(static_cast<size_t>(g.num_values()));
  std::vector<GroupSignature> signatures;
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    signatures.push_back(loop_group_signature(g, plan.groups[gi]));
    for (ValueId v : signatures.back().inputs) readers[static_cast<size_t>(v.index)].insert(static_cast<int>(gi));
  }
  std::vector<std::vector<int>> out(plan.groups.size());
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    if (plan.groups[gi].kind == GroupKind::Library) continue;
    for (ValueId v : signatures[gi].outputs) {
      const TensorType& t = g.type(v);
      if (!graph_outputs.count(v) || !is_static(t.shape)) continue;
      bool read_elsewhere = false;
      for (int reader : readers[static_cast<size_t>(v.index)]) read_elsewhere = read_elsewhere || reader != static_cast<int>(gi);
      if (read_elsewhere) continue;
      int64_t bytes = dtype_size(t.dtype);
      for (const Dim& d : t.shape) bytes *= d.extent();
      if (bytes >= min_bytes) out[gi].push_back(v.index);
    }
    std::sort(out[gi].begin(), out[gi].end());
  }
  return out;
}

}  // namespace stitch::lower
