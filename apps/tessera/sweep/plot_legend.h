// A line plot's legend: one entry per series (its line sample, marker and
// name; the plot's references_legend instead of one entry per reference
// series when it has several), then one per reference line, drawn by
// pllegend outside the plot area, right of it or below it.
#pragma once

#include <plplot.h>

#include <string>
#include <vector>

#include "apps/tessera/sweep/line_plot.h"

namespace tessera::sweep {

// The legend's size in normalized viewport coordinates.
struct LegendSize {
  PLFLT width = 0;
  PLFLT height = 0;
};

enum class LegendSide { kRight, kBelow };

struct LegendPlacement {
  LegendSide side = LegendSide::kRight;
  int columns = 1;    // entries fill rows left to right when there are several
  PLFLT scale = 1.0;  // of its text, markers and spacing; smaller for a crowded legend
};

class Legend {
 public:
  // Names longer than kMaxNameLength characters end in "..." in the legend.
  static constexpr std::size_t kMaxNameLength = 48;

  explicit Legend(const LinePlot& plot);

  std::size_t size() const { return texts_.size(); }

  // Draws the legend outside the current viewport, `away` from the edge on
  // its side and its centre moved `along` that edge from the edge's middle
  // (up, or right), in normalized viewport coordinates, as is `sample_width`,
  // the length of the line sample. Returns its size.
  LegendSize draw(LegendPlacement placement, PLFLT away, PLFLT along, PLFLT sample_width) const;
  // The size draw() would give, found by drawing it invisibly (in the page
  // colour, no box): pllegend reports its size only by drawing.
  LegendSize measure(LegendPlacement placement, PLFLT sample_width) const;

 private:
  LegendSize draw_with(LegendPlacement placement, PLFLT away, PLFLT along, PLFLT sample_width,
                       bool visible) const;

  std::vector<std::string> texts_;
  std::vector<const char*> text_ptrs_, symbols_;
  std::vector<PLINT> options_, text_colours_, colours_, styles_, symbol_numbers_;
  std::vector<PLFLT> widths_, symbol_scales_;
  // Unused by line and symbol entries, but pllegend reads them.
  std::vector<PLINT> box_colours_, box_patterns_;
  std::vector<PLFLT> box_scales_, box_widths_;
};

// `text` for PLplot's text functions: '#' starts an escape sequence there
// ("#u" is superscript), so a literal one is doubled.
std::string plplot_text(const std::string& text);

}  // namespace tessera::sweep
