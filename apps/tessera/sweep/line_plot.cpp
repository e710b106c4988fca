#include "apps/tessera/sweep/line_plot.h"

#include <plplot.h>
#include <unistd.h>

#include <algorithm>
#include <array>
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

// Draws the plot on the current PLplot stream's page.
void draw_page(const LinePlot& plot, const PlotLayout& layout) {
  pladv(0);
  plschr(0.0, 1.0);
  const Legend legend(plot.series);

  // Measure the legend against the whole page, then shrink the standard
  // viewport (which leaves room for tick and axis labels) to make it space.
  plvpor(0.0, 1.0, 0.0, 1.0);
  plwind(0.0, 1.0, 0.0, 1.0);
  const LegendLayout legend_layout = place_legend(legend);
  const bool beside = legend_layout.placement.side == LegendSide::kRight;
  plvsta();
  PLFLT left = 0, right = 0, bottom = 0, top = 0;
  plgvpd(&left, &right, &bottom, &top);
  const PLFLT label_room = bottom;  // under the plot: tick labels and the x label
  if (beside)
    right = std::min(right, 1.0 - legend_layout.size.width - 2 * kLegendGap);
  else
    bottom = std::min(bottom + legend_layout.size.height + kLegendGap, top - kMinPlotHeight);
  plvpor(left, right, bottom, top);
  plwind(layout.x.min, layout.x.max, layout.y.min, layout.y.max);

  // A log axis gets PLplot's ticks but its labels and grid lines from
  // log_axis_ticks(): PLplot would label only the powers of ten.
  const std::vector<Tick> x_ticks =
      plot.log_x ? log_axis_ticks(layout.x.min, layout.x.max) : std::vector<Tick>{};
  const std::vector<Tick> y_ticks =
      plot.log_y ? log_axis_ticks(layout.y.min, layout.y.max) : std::vector<Tick>{};
  plcol0(kGridColour);
  plwidth(1.0);
  pllsty(1);
  plbox(plot.log_x ? "" : "g", 0, 0, plot.log_y ? "" : "g", 0, 0);
  for (const Tick& tick : x_ticks) pljoin(tick.position, layout.y.min, tick.position, layout.y.max);
  for (const Tick& tick : y_ticks) pljoin(layout.x.min, tick.position, layout.x.max, tick.position);

  for (std::size_t i = 0; i < layout.runs.size(); ++i) {
    const SeriesStyle style = series_style(i);
    plcol0(style.colour);
    for (const PointRun& run : layout.runs[i]) {
      const auto n = static_cast<PLINT>(run.xs.size());
      pllsty(style.line_style);
      plwidth(kSeriesLineWidth);
      plline(n, run.xs.data(), run.ys.data());
      pllsty(1);
      plschr(0.0, kMarkerScale);
      plstring(n, run.xs.data(), run.ys.data(), style.marker);
      plschr(0.0, 1.0);
    }
  }

  // Axes over the data, so a point on the frame does not hide it. ("n":
  // numeric labels, "v": the y axis's upright; plmtex() places them as plbox
  // would.)
  plcol0(kInkColour);
  plwidth(1.0);
  plbox(plot.log_x ? "bcstl" : "bcnst", 0, 0, plot.log_y ? "bcstl" : "bcnstv", 0, 0);
  for (const Tick& tick : x_ticks)
    plmtex("b", 1.5, (tick.position - layout.x.min) / (layout.x.max - layout.x.min), 0.5,
           tick.label.c_str());
  for (const Tick& tick : y_ticks)
    plmtex("lv", 0.5, (tick.position - layout.y.min) / (layout.y.max - layout.y.min), 1.0,
           tick.label.c_str());
  pllab(plplot_text(plot.x_label).c_str(), plplot_text(plot.y_label).c_str(),
        plplot_text(plot.title).c_str());

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
