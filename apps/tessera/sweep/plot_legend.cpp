#include "apps/tessera/sweep/plot_legend.h"

#include <algorithm>

#include "apps/tessera/sweep/plot_style.h"

namespace tessera::sweep {
namespace {

// At most `max_chars` UTF-8 characters of `text`, the last three "..." when cut.
std::string shortened(const std::string& text, std::size_t max_chars) {
  std::size_t chars = 0;
  std::size_t cut = text.size();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (chars == max_chars - 3) cut = i;
    if (++chars > max_chars) return text.substr(0, cut) + "...";
  }
  return text;
}

}  // namespace

std::string plplot_text(const std::string& text) {
  std::string out;
  for (const char c : text) {
    out += c;
    if (c == '#') out += '#';
  }
  return out;
}

Legend::Legend(const LinePlot& plot) {
  const std::vector<SeriesStyle> styles = plot_series_styles(plot);
  const auto add = [&](const std::string& name, const SeriesStyle& style) {
    texts_.push_back(plplot_text(shortened(name, kMaxNameLength)));
    symbols_.push_back(style.marker ? style.marker : "");
    options_.push_back(PL_LEGEND_LINE | (style.marker ? PL_LEGEND_SYMBOL : 0));
    text_colours_.push_back(kInkColour);
    colours_.push_back(style.colour);
    styles_.push_back(style.line_style);
    symbol_numbers_.push_back(1);
    widths_.push_back(style.line_width);
    symbol_scales_.push_back(kMarkerScale);
    box_colours_.push_back(kPageColour);
    box_patterns_.push_back(0);
    box_scales_.push_back(1.0);
    box_widths_.push_back(1.0);
  };
  const auto references =
      std::count_if(plot.series.begin(), plot.series.end(),
                    [](const PlotSeries& series) { return series.reference_for.has_value(); });
  const bool one_for_references = references >= 2 && !plot.references_legend.empty();
  for (std::size_t i = 0; i < plot.series.size(); ++i)
    if (!one_for_references || !plot.series[i].reference_for) add(plot.series[i].name, styles[i]);
  if (one_for_references) {
    SeriesStyle style = reference_line_style();
    style.line_style = kReferenceSeriesLineStyle;
    add(plot.references_legend, style);
  }
  for (const ReferenceLine& line : plot.reference_lines) add(line.name, reference_line_style());
  for (const auto& text : texts_) text_ptrs_.push_back(text.c_str());
}

LegendSize Legend::draw(LegendPlacement placement, PLFLT away, PLFLT along,
                        PLFLT sample_width) const {
  return draw_with(placement, away, along, sample_width, /*visible=*/true);
}

LegendSize Legend::measure(LegendPlacement placement, PLFLT sample_width) const {
  return draw_with(placement, 0.0, 0.0, sample_width, /*visible=*/false);
}

LegendSize Legend::draw_with(LegendPlacement placement, PLFLT away, PLFLT along, PLFLT sample_width,
                             bool visible) const {
  std::vector<PLINT> text_colours = text_colours_, colours = colours_;
  if (!visible) {
    text_colours.assign(text_colours.size(), kPageColour);
    colours.assign(colours.size(), kPageColour);
  }
  const bool right = placement.side == LegendSide::kRight;
  const PLINT opt = PL_LEGEND_ROW_MAJOR |
                    (visible ? PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX : PL_LEGEND_NULL);
  const PLINT position = PL_POSITION_OUTSIDE | (right ? PL_POSITION_RIGHT : PL_POSITION_BOTTOM);
  const PLFLT x = right ? away : along;
  const PLFLT y = right ? along : away;
  // pllegend spaces rows by the current character height.
  plschr(0.0, placement.scale);
  LegendSize size;
  pllegend(&size.width, &size.height, opt, position, x, y, sample_width,
           /*bg_color=*/kPageColour, /*bb_color=*/kGridColour, /*bb_style=*/1, /*nrow=*/0,
           /*ncolumn=*/placement.columns, static_cast<PLINT>(texts_.size()), options_.data(),
           /*text_offset=*/0.6, /*text_scale=*/0.9 * placement.scale, /*text_spacing=*/2.2,
           /*text_justification=*/0.0, text_colours.data(), text_ptrs_.data(), box_colours_.data(),
           box_patterns_.data(), box_scales_.data(), box_widths_.data(), colours.data(),
           styles_.data(), widths_.data(), colours.data(), symbol_scales_.data(),
           symbol_numbers_.data(), symbols_.data());
  plschr(0.0, 1.0);
  return size;
}

}  // namespace tessera::sweep
