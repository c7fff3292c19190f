// dot_panels (runtime/common/launch_list.h): how a dot epilogue's blocks are
// cut into panels, and which rows of the dot each panel needs first.
#include <gtest/gtest.h>

#include <cstdint>

#include "runtime/common/dot_panels.h"

namespace stitch::runtime {
namespace {

// Every block in exactly one panel, in order; panels row-aligned and
// adjacent; a block's elements all in its panel's rows; a panel within
// `panel_bytes` unless row alignment makes it larger.
void expect_panels_cover(int64_t rows, int64_t row_length, int64_t panel_elements, int64_t element_bytes,
                         int64_t panel_bytes) {
  SCOPED_TRACE(testing::Message() << rows << " x " << row_length << ", " << panel_elements << " a block, panels of "
                                  << panel_bytes << " bytes");
  const std::vector<DotPanel> panels = dot_panels(rows, row_length, panel_elements, element_bytes, panel_bytes);
  ASSERT_FALSE(panels.empty());
  const int64_t elements = rows * row_length;
  const int64_t blocks = (elements + panel_elements - 1) / panel_elements;
  int64_t next_block = 0, next_row = 0;
  for (const DotPanel& p : panels) {
    EXPECT_EQ(p.first_block, next_block);
    EXPECT_EQ(p.first_row, next_row);
    EXPECT_GT(p.end_block, p.first_block);
    EXPECT_GT(p.end_row, p.first_row);
    // Its blocks' elements lie in its rows.
    EXPECT_EQ(p.first_block * panel_elements, p.first_row * row_length);
    const int64_t last_element = std::min(elements, p.end_block * panel_elements) - 1;
    EXPECT_LT(last_element / row_length, p.end_row);
    EXPECT_LE(p.end_row, rows);
    next_block = p.end_block;
    next_row = p.end_row;
  }
  EXPECT_EQ(next_block, blocks);
  EXPECT_EQ(next_row, rows);
}

TEST(DotPanels, CoverEveryBlockAndTheRowsItReads) {
  expect_panels_cover(1024, 768, 1024, 4, 1 << 20);    // BERT's projections, loop blocks
  expect_panels_cover(1024, 768, 8 * 768, 4, 1 << 20);  // LayerNorm, 8 rows a block
  expect_panels_cover(301, 83, 1024, 4, 4096);          // blocks straddle rows
  expect_panels_cover(7, 3, 1024, 8, 1);                // one block holds every row
  expect_panels_cover(37 * 6, 29, 29, 4, 20000);        // a row a block
  expect_panels_cover(1, 1, 1, 4, 1);
}

TEST(DotPanels, APanelIsAWholeNumberOfBlocksWithinItsBytes) {
  const std::vector<DotPanel> panels = dot_panels(1000, 100, 1000, 4, 16000);  // 4 blocks, 40 rows a panel
  ASSERT_EQ(panels.size(), 25u);
  EXPECT_EQ(panels[0].end_block, 4);
  EXPECT_EQ(panels[0].end_row, 40);
  EXPECT_EQ(panels[24].first_row, 960);
  EXPECT_EQ(panels[24].end_row, 1000);
}

TEST(DotPanels, SmallResultsAreSplitForEveryThread) {
  // 100 blocks of 4 KB fit one 1 MB panel; four are asked for.
  EXPECT_EQ(dot_panels(1000, 100, 1000, 4, 1 << 20, 4).size(), 4u);
  expect_panels_cover(512, 72, 72, 4, 1 << 20);
  EXPECT_EQ(dot_panels(512, 72, 72, 4, 1 << 20, 4).size(), 4u);
  // No more panels than blocks.
  EXPECT_EQ(dot_panels(3, 72, 72, 4, 1 << 20, 4).size(), 3u);
}

TEST(DotPanels, PanelsGrowToTheNextRowBoundary) {
  // 1024-element blocks over rows of 768: a row boundary every 3 blocks.
  const std::vector<DotPanel> panels = dot_panels(1024, 768, 1024, 4, 4096);
  ASSERT_EQ(panels.size(), 256u);
  EXPECT_EQ(panels[0].end_block, 3);
  EXPECT_EQ(panels[0].end_row, 4);
  // Rows of 83: every 83 blocks, here the whole result.
  EXPECT_EQ(dot_panels(301, 83, 1024, 4, 4096).size(), 1u);
}

}  // namespace
}  // namespace stitch::runtime
