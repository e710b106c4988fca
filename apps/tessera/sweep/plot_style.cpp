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

}  // namespace tessera::sweep
