#include "runtime/common/dot_panels.h"

#include <numeric>

#include "stitch/error.h"

namespace stitch::runtime {

std::vector<DotPanel> dot_panels(int64_t rows, int64_t row_length, int64_t panel_elements, int64_t element_bytes,
                                 int64_t panel_bytes, int64_t min_panels) {
  STITCH_ASSERT(rows > 0 && row_length > 0 && panel_elements > 0 && element_bytes > 0, "dot_panels: empty problem");
  const int64_t elements = rows * row_length;
  const int64_t blocks = (elements + panel_elements - 1) / panel_elements;
  // Block boundaries that are row boundaries: every `aligned` blocks.
  const int64_t aligned = row_length / std::gcd(row_length, panel_elements);
  const int64_t by_bytes = std::max<int64_t>(1, panel_bytes / (panel_elements * element_bytes));
  const int64_t wanted = std::min(by_bytes, std::max<int64_t>(1, blocks / std::max<int64_t>(1, min_panels)));
  const int64_t per_panel = (wanted + aligned - 1) / aligned * aligned;
  std::vector<DotPanel> panels;
  for (int64_t first = 0; first < blocks; first += per_panel) {
    DotPanel p;
    p.first_block = first;
    p.end_block = std::min(blocks, first + per_panel);
    p.first_row = first * panel_elements / row_length;
    p.end_row = p.end_block == blocks ? rows : p.end_block * panel_elements / row_length;
    panels.push_back(p);
  }
  return panels;
}

int64_t dot_rows(const std::vector<int64_t>& shape) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
  return rows;
}

}  // namespace stitch::runtime
