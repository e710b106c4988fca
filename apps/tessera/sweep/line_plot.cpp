#include "apps/tessera/sweep/line_plot.h"

#include <plplot.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "apps/tessera/sweep/plot_layout.h"
#include "apps/tessera/sweep/plot_legend.h"
#include "apps/tessera/sweep/plot_style.h"
#include "apps/tessera/sweep/plot_ticks.h"
#include "core/io/output_file.h"

namespace tessera::sweep {
namespace {

// PLplot keeps its streams in globals: one plot at a time in a process.
std::mutex& plplot_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Sizes as fractions of the page. A legend wider or taller than these goes
// below the plot instead of beside it, so the plot keeps most of the width.
constexpr PLFLT kMaxSideLegendWidth = 0.35;
constexpr PLFLT kMaxSideLegendHeight = 0.8;
constexpr PLFLT kMaxLegendWidthBelow = 0.92;
constexpr PLFLT kMaxLegendHeightBelow = 0.35;
constexpr PLFLT kMinPlotHeight = 0.25;  // however many entries the legend has
constexpr PLFLT kLegendGap = 0.02;      // between plot and legend
constexpr PLFLT kSampleWidth = 0.05;    // the legend's line samples
constexpr PLFLT kErrorBarWidth = 1.2;

struct LegendLayout {
  LegendPlacement placement;
  LegendSize size;  // of the page: measured with the whole page as viewport
};

// Beside the plot in one column while that is narrow and short enough, else
// below it in as many columns as fit across the page, smaller if it would
// take more than kMaxLegendHeightBelow (a legend that still does not fit
// runs off the page rather than squash the plot away).
LegendLayout place_legend(const Legend& legend) {
  const LegendPlacement beside{LegendSide::kRight, 1};
  const LegendSize one_column = legend.measure(beside, kSampleWidth);
  if (one_column.width <= kMaxSideLegendWidth && one_column.height <= kMaxSideLegendHeight)
    return {beside, one_column};
  const int entries = static_cast<int>(legend.size());
  LegendLayout layout;
  for (const PLFLT scale : {1.0, 0.8, 0.65}) {
    LegendPlacement below{LegendSide::kBelow, 1, scale};
    const PLFLT column_width = legend.measure(below, kSampleWidth).width;
    const int max_columns =
        std::clamp(static_cast<int>(kMaxLegendWidthBelow / column_width), 1, entries);
    const int rows = (entries + max_columns - 1) / max_columns;
    below.columns = (entries + rows - 1) / rows;  // as few as give that many rows
    layout = {below, legend.measure(below, kSampleWidth)};
    // Columns are separated by a gap the estimate above left out.
    while (layout.size.width > kMaxLegendWidthBelow && layout.placement.columns > 1) {
      --layout.placement.columns;
      layout.size = legend.measure(layout.placement, kSampleWidth);
    }
    if (layout.size.height <= kMaxLegendHeightBelow) break;
  }
  return layout;
}

// Character heights (the current size) in normalized page coordinates.
struct CharSize {
  PLFLT mm = 0;      // the height in millimetres
  PLFLT across = 0;  // as a fraction of the page's width
  PLFLT up = 0;      // as a fraction of its height
};

CharSize char_size() {
  PLFLT default_mm = 0, mm = 0;
  plgchr(&default_mm, &mm);
  PLFLT x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  plgspa(&x0, &x1, &y0, &y1);
  return {mm, mm / (x1 - x0), mm / (y1 - y0)};
}

// About how wide `text` (PLplot text) is, in character heights: PLplot does
// not export plstrl(), so from the glyphs' widths in DejaVu Sans (the cairo
// driver's sans font, measured on its PNGs), rounded up a little: digits
// 0.86, lower case 0.78 (narrow letters, spaces and points 0.45, m and w
// 1.2), upper case and the rest 0.92, superscripts three quarters.
PLFLT text_width(const std::string& text) {
  PLFLT width = 0, scale = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '#' && i + 1 < text.size()) {
      const char code = text[++i];
      if (code == 'u') scale *= 0.75;
      if (code == 'd') scale /= 0.75;
      if (code == '#') width += 0.92 * scale;
      continue;
    }
    if ((static_cast<unsigned char>(c) & 0xC0) == 0x80) continue;  // UTF-8 continuation
    const auto byte = static_cast<unsigned char>(c);
    const PLFLT glyph = std::isdigit(byte)                              ? 0.86
                        : std::strchr(" .,:;'|!ijlftr()", c) != nullptr ? 0.45
                        : c == 'm' || c == 'w'                          ? 1.2
                        : std::islower(byte)                            ? 0.78
                                                                        : 0.92;
    width += glyph * scale;
  }
  return width;
}

// The widest label, in character heights.
PLFLT widest(const std::vector<Tick>& ticks) {
  PLFLT most = 0;
  for (const Tick& tick : ticks) most = std::max(most, text_width(tick.label));
  return most;
}

// Every other tick, the first kept.
std::vector<Tick> every_other(const std::vector<Tick>& ticks) {
  std::vector<Tick> kept;
  for (std::size_t i = 0; i < ticks.size(); i += 2) kept.push_back(ticks[i]);
  return kept;
}

// Ticks thinned while their labels side by side (a character's gap each)
// would not fit in `length` character heights.
std::vector<Tick> fit_across(std::vector<Tick> ticks, PLFLT length) {
  while (ticks.size() > 2) {
    PLFLT total = 0;
    for (const Tick& tick : ticks) total += text_width(tick.label) + 1.0;
    if (total <= length) break;
    ticks = every_other(ticks);
  }
  return ticks;
}

// The same for labels stacked up an axis `length` character heights long.
std::vector<Tick> fit_up(std::vector<Tick> ticks, PLFLT length) {
  while (ticks.size() > 2 && 1.8 * static_cast<PLFLT>(ticks.size()) > length)
    ticks = every_other(ticks);
  return ticks;
}

std::vector<Tick> axis_ticks(AxisRange range, bool log) {
  return log ? log_axis_ticks(range.min, range.max) : linear_axis_ticks(range.min, range.max);
}

// The major-tick interval plbox() should use: the labels' step on a linear
// axis (its ticks are multiples of it), 0 (PLplot's choice) otherwise.
PLFLT tick_step(const std::vector<Tick>& ticks, bool log) {
  if (log || ticks.size() < 2) return 0;
  return ticks[1].position - ticks[0].position;
}

// Where the text goes, in character heights out from the plot's edges:
// tick labels, then the axis labels beyond them, the title and subtitle
// above.
constexpr PLFLT kTickLabelGap = 0.6;
constexpr PLFLT kXTickLabels = 1.5;
constexpr PLFLT kXLabel = 3.4;
constexpr PLFLT kTitle = 1.8;  // without a subtitle
constexpr PLFLT kTitleOverSubtitle = 3.3;
constexpr PLFLT kSubtitle = 1.4;  // in the subtitle's own (smaller) heights
constexpr PLFLT kSubtitleScale = 0.8;
constexpr PLFLT kSmallestLabelScale = 0.55;

// Draws the plot on the current PLplot stream's page.
void draw_page(const LinePlot& plot, const PlotLayout& layout) {
  pladv(0);
  plschr(0.0, 1.0);
  const Legend legend(plot);
  const std::vector<SeriesStyle> styles = plot_series_styles(plot);

  // Measure the legend and the labels against the whole page, then leave
  // them room around the plot.
  plvpor(0.0, 1.0, 0.0, 1.0);
  plwind(0.0, 1.0, 0.0, 1.0);
  const CharSize ch = char_size();
  const LegendLayout legend_layout = place_legend(legend);
  const bool beside = legend_layout.placement.side == LegendSide::kRight;
  std::vector<Tick> y_ticks = axis_ticks(layout.y, plot.log_y);
  const PLFLT y_label_at = kTickLabelGap + widest(y_ticks) + 1.0;
  PLFLT left = (y_label_at + 1.0) * ch.across;
  PLFLT right = 1.0 - 1.5 * ch.across;
  PLFLT bottom = (kXLabel + 1.2) * ch.up;
  const PLFLT top = 1.0 - (plot.subtitle.empty() ? kTitle + 1.2 : kTitleOverSubtitle + 1.2) * ch.up;
  const PLFLT label_room = bottom;  // under the plot: tick labels and the x label
  if (beside)
    right = std::min(right, 1.0 - legend_layout.size.width - 2 * kLegendGap);
  else
    bottom = std::min(bottom + legend_layout.size.height + kLegendGap, top - kMinPlotHeight);
  left = std::min(left, right - 0.2);
  plvpor(left, right, bottom, top);
  plwind(layout.x.min, layout.x.max, layout.y.min, layout.y.max);
  const std::vector<Tick> x_ticks =
      fit_across(axis_ticks(layout.x, plot.log_x), (right - left) / ch.across);
  y_ticks = fit_up(std::move(y_ticks), (top - bottom) / ch.up);

  // The grid at the labelled values.
  plcol0(kGridColour);
  plwidth(1.0);
  pllsty(1);
  for (const Tick& tick : x_ticks) pljoin(tick.position, layout.y.min, tick.position, layout.y.max);
  for (const Tick& tick : y_ticks) pljoin(layout.x.min, tick.position, layout.x.max, tick.position);

  // Reference lines, then the references, then the series over them.
  for (const double y : layout.reference_ys) {
    const SeriesStyle style = reference_line_style();
    plcol0(style.colour);
    pllsty(style.line_style);
    plwidth(style.line_width);
    pljoin(layout.x.min, y, layout.x.max, y);
  }
  for (const bool references : {true, false})
    for (std::size_t i = 0; i < layout.runs.size(); ++i) {
      if (plot.series[i].reference_for.has_value() != references) continue;
      const SeriesStyle& style = styles[i];
      plcol0(style.colour);
      for (const PointRun& run : layout.runs[i]) {
        const auto n = static_cast<PLINT>(run.xs.size());
        pllsty(style.line_style);
        plwidth(style.line_width);
        plline(n, run.xs.data(), run.ys.data());
        pllsty(1);
        plwidth(kErrorBarWidth);
        for (std::size_t p = 0; p < run.xs.size(); ++p) {
          if (!std::isfinite(run.y_low[p]) || !std::isfinite(run.y_high[p])) continue;
          PLFLT x = run.xs[p], low = run.y_low[p], high = run.y_high[p];
          plerry(1, &x, &low, &high);
        }
        plschr(0.0, kMarkerScale);
        plstring(n, run.xs.data(), run.ys.data(), style.marker);
        plschr(0.0, 1.0);
      }
    }

  // Axes over the data, so a point on the frame does not hide it; every
  // number from the ticks above, each axis in one format.
  plcol0(kInkColour);
  plwidth(1.0);
  pllsty(1);
  plbox(plot.log_x ? "bcstl" : "bcst", tick_step(x_ticks, plot.log_x), 0,
        plot.log_y ? "bcstl" : "bcst", tick_step(y_ticks, plot.log_y), 0);
  for (const Tick& tick : x_ticks)
    plmtex("b", kXTickLabels, (tick.position - layout.x.min) / (layout.x.max - layout.x.min), 0.5,
           tick.label.c_str());
  for (const Tick& tick : y_ticks)
    plmtex("lv", kTickLabelGap, (tick.position - layout.y.min) / (layout.y.max - layout.y.min), 1.0,
           tick.label.c_str());
  // Each label smaller where it would run past the plot's side (the titles:
  // the page's width).
  const PLFLT across = (right - left) / ch.across, up = (top - bottom) / ch.up;
  // A title is centred over the plot while it fits on the page there, else
  // moved in from the page's edge.
  const auto label = [&](const char* side, PLFLT at, PLFLT scale, PLFLT room,
                         const std::string& text) {
    const std::string escaped = plplot_text(text);
    const PLFLT width = scale * text_width(escaped);
    if (width > room) scale = std::max(kSmallestLabelScale, scale * room / width);
    PLFLT position = 0.5;
    if (side[0] == 't') {
      const PLFLT half = std::min(0.5, scale * text_width(escaped) * ch.across / 2);
      const PLFLT centre = std::clamp((left + right) / 2, half, 1.0 - half);
      position = (centre - left) / (right - left);
    }
    plschr(0.0, scale);
    plmtex(side, at / scale, position, 0.5, escaped.c_str());
    plschr(0.0, 1.0);
  };
  label("b", kXLabel, 1.0, across, plot.x_label);
  label("l", y_label_at, 1.0, up, plot.y_label);
  const PLFLT page_across = 1.0 / ch.across - 1.0;
  if (plot.subtitle.empty()) {
    label("t", kTitle, 1.0, page_across, plot.title);
  } else {
    label("t", kTitleOverSubtitle, 1.0, page_across, plot.title);
    label("t", kSubtitle * kSubtitleScale, kSubtitleScale, page_across, plot.subtitle);
  }

  const PLFLT width = right - left, height = top - bottom;
  if (beside) {
    // Top-aligned with the plot while it fits, else centred on it.
    const PLFLT along = std::max(0.0, (1.0 - legend_layout.size.height / height) / 2);
    legend.draw(legend_layout.placement, kLegendGap / width, along, kSampleWidth / width);
  } else {
    legend.draw(legend_layout.placement, label_room / height, 0.0, kSampleWidth / width);
  }
}

bool has_png_driver() {
  std::array<const char*, 256> menus{}, names{};
  const char** menu_ptr = menus.data();
  const char** name_ptr = names.data();
  int count = static_cast<int>(names.size());
  plgDevs(&menu_ptr, &name_ptr, &count);
  for (int i = 0; i < count; ++i)
    if (names[i] && std::strcmp(names[i], "pngcairo") == 0) return true;
  return false;
}

// A complete PNG starts with the signature and ends with the IEND chunk.
bool is_complete_png(int fd) {
  static constexpr unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  static constexpr unsigned char kEnd[12] = {0,   0,   0,    0,    'I',  'E',
                                             'N', 'D', 0xAE, 0x42, 0x60, 0x82};
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < static_cast<off_t>(sizeof kSignature + sizeof kEnd)) return false;
  unsigned char head[8], tail[12];
  return ::pread(fd, head, sizeof head, 0) == sizeof head &&
         ::pread(fd, tail, sizeof tail, size - static_cast<off_t>(sizeof tail)) == sizeof tail &&
         std::memcmp(head, kSignature, sizeof head) == 0 &&
         std::memcmp(tail, kEnd, sizeof tail) == 0;
}

}  // namespace

Status write_line_plot(const LinePlot& plot, const std::string& png_path) {
  ASSIGN_OR_RETURN(const PlotLayout layout, lay_out_plot(plot));
  std::lock_guard lock(plplot_mutex());
  // Without the driver plinit() would print a device menu and read stdin.
  if (!has_png_driver())
    return failed_precondition("cannot draw PNG file '" + png_path +
                               "': PLplot has no pngcairo driver (install plplot-driver-cairo)");
  ASSIGN_OR_RETURN(OutputFile file, OutputFile::create(png_path, "PNG file"));
  // PLplot writes to a FILE* opened here (if it failed to open a file itself
  // it would exit() the process) and closes it in plend1(); it gets its own
  // descriptor, so the temporary stays open here to check and commit.
  const int plplot_fd = ::dup(file.fd());
  FILE* out = plplot_fd >= 0 ? ::fdopen(plplot_fd, "wb") : nullptr;
  if (!out) {
    if (plplot_fd >= 0) ::close(plplot_fd);
    return internal_error("cannot write PNG file '" + png_path + "': no file descriptor left");
  }

  PLINT previous_stream = 0;
  plgstrm(&previous_stream);
  PLINT stream = -1;
  plmkstrm(&stream);  // a fresh stream: nothing left over from an earlier plot
  if (stream < 0) {
    std::fclose(out);
    return internal_error("cannot draw PNG file '" + png_path + "': PLplot has no free stream");
  }
  plsdev("pngcairo");
  plsfile(out);
  plspage(0.0, 0.0, plot.width_px, plot.height_px, 0, 0);
  // The colours must be set before plinit(), or the page is black.
  std::array<PLINT, kColourMap.size()> r{}, g{}, b{};
  for (std::size_t i = 0; i < kColourMap.size(); ++i) {
    r[i] = kColourMap[i].r;
    g[i] = kColourMap[i].g;
    b[i] = kColourMap[i].b;
  }
  plscmap0(r.data(), g.data(), b.data(), static_cast<PLINT>(kColourMap.size()));
  plinit();
  draw_page(plot, layout);
  plend1();  // writes the PNG, closes `out`, frees the stream
  plsstrm(previous_stream);

  if (!is_complete_png(file.fd()))
    return internal_error("cannot write PNG file '" + png_path +
                          "': PLplot wrote an incomplete image (is the disk full?)");
  return file.commit();
}

}  // namespace tessera::sweep

#if defined(__SANITIZE_ADDRESS__)
#define TESSERA_LSAN_HOOK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESSERA_LSAN_HOOK 1
#endif
#endif
#ifdef TESSERA_LSAN_HOOK
// Pango's font map keeps fontconfig's patterns for the life of the process
// (about 50-120 KB, the same after 1 plot or 20): not a leak per plot, but
// LeakSanitizer reports it at exit in every binary that draws one.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libfontconfig.so\n";
}
#endif
