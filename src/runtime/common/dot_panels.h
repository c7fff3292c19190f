// A dot epilogue's panels (fusion/dot_epilogues.h): where the dot's call
// stops to run its epilogue's blocks.
#pragma once

#include <cstdint>
#include <vector>

namespace stitch::runtime {

// Where a dot epilogue's block ranges stop (fusion/dot_epilogues.h): panels
// of about `panel_bytes` of the dot's result, each a whole number of blocks
// of `panel_elements` that starts and ends on a row of the dot (of
// `row_length` elements, `rows` in all), so that panels are independent: a
// panel computes its rows and runs its blocks, which read only those rows.
// Panels shrink below `panel_bytes` where that gives at least `min_panels`
// (so every thread has work); when blocks and rows only meet at the end, one
// panel. Pure, so tests pin it.
struct DotPanel {
  int64_t first_block = 0, end_block = 0;  // the epilogue's blocks [first, end)
  int64_t first_row = 0, end_row = 0;      // the dot's rows [first, end) they read
};
std::vector<DotPanel> dot_panels(int64_t rows, int64_t row_length, int64_t panel_elements, int64_t element_bytes,
                                 int64_t panel_bytes, int64_t min_panels = 1);

// A dot result's rows: the product of every axis but the last.
int64_t dot_rows(const std::vector<int64_t>& shape);

}  // namespace stitch::runtime
