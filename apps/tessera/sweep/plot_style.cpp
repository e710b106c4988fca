#include "apps/tessera/sweep/plot_style.h"

namespace tessera::sweep {
namespace {

// Filled shapes first, then their outlines (the cairo driver draws them with
// the text font, which has these glyphs).
constexpr std::array<const char*, 10> kMarkers = {"\u25CF", "\u25A0", "\u25B2", "\u25C6", "\u25BC",
                                                  "\u25CB", "\u25A1", "\u25B3", "\u25C7", "\u25BD"};
// PLplot's continuous, short-dash, long-dash and long-dash-short-gap styles.
constexpr std::array<PLINT, 4> kLineStyles = {1, 2, 3, 4};
constexpr std::size_t kSeriesColours = kColourMap.size() - kFirstSeriesColour;

}  // namespace

SeriesStyle series_style(std::size_t index) {
  return {kFirstSeriesColour + static_cast<PLINT>(index % kSeriesColours),
          kLineStyles[index % kLineStyles.size()], kMarkers[index % kMarkers.size()]};
}

std::vector<SeriesStyle> plot_series_styles(const LinePlot& plot) {
  constexpr std::size_t kHalf = kMarkers.size() / 2;  // filled, then open
  std::vector<SeriesStyle> styles(plot.series.size());
  std::vector<std::size_t> plain_index(plot.series.size(), 0);
  std::size_t plain = 0;
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    if (plot.series[i].reference_for) continue;
    plain_index[i] = plain;
    styles[i] = series_style(plain++);
  }
  for (std::size_t i = 0; i < plot.series.size(); ++i) {
    const auto& of = plot.series[i].reference_for;
    if (!of || *of >= plot.series.size()) continue;
    const std::size_t marker = plain_index[*of] % kMarkers.size();
    styles[i] = {styles[*of].colour, kReferenceSeriesLineStyle,
                 kMarkers[marker < kHalf ? marker + kHalf : marker - kHalf], kReferenceLineWidth};
  }
  return styles;
}

SeriesStyle reference_line_style() {
  return {kInkColour, kReferenceLineStyle, nullptr, kReferenceLineWidth};
}

}  // namespace tessera::sweep
