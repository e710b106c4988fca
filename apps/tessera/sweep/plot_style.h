// How a line plot looks: the colour map (white page, dark ink, light grid,
// ten series colours) and each series' colour, line style, width and marker;
// a reference (a control, a baseline) looks like a lighter twin of its series.
#pragma once

#include <plplot.h>

#include <array>
#include <cstddef>
#include <vector>

#include "apps/tessera/sweep/line_plot.h"

namespace tessera::sweep {

struct Rgb {
  PLINT r, g, b;
};

// Colour map 0 indices. The series colours are Tableau 10: distinct from each
// other and readable on white.
constexpr PLINT kPageColour = 0;
constexpr PLINT kInkColour = 1;
constexpr PLINT kGridColour = 2;
constexpr PLINT kFirstSeriesColour = 3;
constexpr std::array<Rgb, 13> kColourMap = {{{255, 255, 255},
                                             {20, 20, 20},
                                             {222, 222, 222},
                                             {31, 119, 180},
                                             {255, 127, 14},
                                             {44, 160, 44},
                                             {214, 39, 40},
                                             {148, 103, 189},
                                             {140, 86, 75},
                                             {227, 119, 194},
                                             {127, 127, 127},
                                             {188, 189, 34},
                                             {23, 190, 207}}};

// Markers are drawn as text, this much smaller than the labels.
constexpr PLFLT kMarkerScale = 0.75;
constexpr PLFLT kSeriesLineWidth = 2.0;
constexpr PLFLT kReferenceLineWidth = 1.2;
constexpr PLINT kReferenceSeriesLineStyle = 2;  // short dashes
constexpr PLINT kReferenceLineStyle = 3;        // long dashes

struct SeriesStyle {
  PLINT colour;        // colour map 0 index
  PLINT line_style;    // pllsty()
  const char* marker;  // UTF-8 glyph, drawn with plstring(); null for none
  PLFLT line_width = kSeriesLineWidth;
};

// Ten colours, ten markers and four line styles: series i and i + 10 still
// differ in line style.
SeriesStyle series_style(std::size_t index);

// Per series of `plot`: the i-th series that is not a reference gets
// series_style(i); a reference its series' colour, short dashes, a thinner
// line and the other form (open or filled) of its series' marker.
std::vector<SeriesStyle> plot_series_styles(const LinePlot& plot);

// The plot's reference lines: long dashes in the ink colour, no marker.
SeriesStyle reference_line_style();

}  // namespace tessera::sweep
