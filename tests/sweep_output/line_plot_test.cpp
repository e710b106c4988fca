// PNG line plots through PLplot: a real PNG of the asked size, different plots
// give different files, the same plot the same file however many plots were
// drawn before (no PLplot state leaks between calls), nothing printed, and
// clear errors for what cannot be drawn or written.
#include "apps/tessera/sweep/line_plot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <thread>

#include "tests/gguf/gguf_test_util.h"
#include "tests/sweep_output/png_pixels.h"

namespace tessera::sweep {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::TempDir;

using Bytes = std::vector<uint8_t>;

uint32_t big_endian_u32(const Bytes& bytes, std::size_t at) {
  return (uint32_t{bytes[at]} << 24) | (uint32_t{bytes[at + 1]} << 16) |
         (uint32_t{bytes[at + 2]} << 8) | uint32_t{bytes[at + 3]};
}

struct PngSize {
  uint32_t width = 0;
  uint32_t height = 0;
};

// The size in the IHDR chunk, which must come first after the signature.
PngSize png_size(const Bytes& png) {
  static const Bytes kSignature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  EXPECT_GE(png.size(), 8u + 8u + 13u + 4u);
  if (png.size() < 33) return {};
  EXPECT_TRUE(std::equal(kSignature.begin(), kSignature.end(), png.begin()));
  EXPECT_EQ(big_endian_u32(png, 8), 13u);  // IHDR's data length
  EXPECT_EQ(std::string(png.begin() + 12, png.begin() + 16), "IHDR");
  return {big_endian_u32(png, 16), big_endian_u32(png, 20)};
}

// Throughput against batch size for three KV codecs: the kind of plot a sweep draws.
LinePlot codec_plot() {
  LinePlot plot;
  plot.title = "Decode throughput by KV codec";
  plot.x_label = "batch size";
  plot.y_label = "tokens/s";
  plot.log_x = true;
  const std::vector<double> batches = {1, 2, 4, 8, 16, 32};
  const char* names[] = {"identity", "int8", "lattice E8 #1"};
  for (int s = 0; s < 3; ++s) {
    PlotSeries series{names[s], batches, {}};
    for (double b : batches) series.ys.push_back(180 * std::pow(b, 0.85 - 0.1 * s) + 25 * s);
    plot.series.push_back(std::move(series));
  }
  plot.series[1].ys[2] = std::numeric_limits<double>::quiet_NaN();  // a failed run
  return plot;
}

Bytes render(const LinePlot& plot, const std::string& path) {
  const Status status = write_line_plot(plot, path);
  EXPECT_TRUE(status.ok()) << status.to_string();
  return testing::read_bytes(path);
}

TEST(LinePlot, WritesAPngOfTheAskedSize) {
  TempDir dir;
  LinePlot plot = codec_plot();
  plot.width_px = 900;
  plot.height_px = 600;
  const Bytes png = render(plot, dir.file("codecs.png"));
  const PngSize size = png_size(png);
  EXPECT_EQ(size.width, 900u);
  EXPECT_EQ(size.height, 600u);
  // Anti-aliased lines, markers and text: tens of KB (a blank page is under 4 KB).
  EXPECT_GT(png.size(), 15000u);
}

TEST(LinePlot, AWhitePageWithDarkAxesAndEachSeriesInItsColour) {
  TempDir dir;
  const testing::PngPixels png = testing::read_png_pixels(render(codec_plot(), dir.file("c.png")));
  ASSERT_EQ(png.pixels.size(), 1000u * 700u) << "not an 8-bit RGB(A) PNG";
  const testing::Rgb8 white{255, 255, 255};
  // PLplot's default page is black with red axes.
  EXPECT_EQ(png.at(0, 0), white);
  EXPECT_EQ(png.at(999, 699), white);
  EXPECT_EQ(png.at(0, 699), white);
  std::size_t whites = 0, darks = 0;
  for (const auto& p : png.pixels) {
    whites += p == white;
    darks += p.r < 80 && p.g < 80 && p.b < 80;
  }
  EXPECT_GT(whites, png.pixels.size() * 7 / 10);
  EXPECT_GT(darks, 2000u);  // the frame, ticks and text
  // Markers are filled glyphs: their insides are the series' exact colour.
  for (const testing::Rgb8 colour :
       {testing::Rgb8{31, 119, 180}, testing::Rgb8{255, 127, 14}, testing::Rgb8{44, 160, 44}}) {
    const auto count = std::count(png.pixels.begin(), png.pixels.end(), colour);
    EXPECT_GT(count, 200) << int(colour.r) << "," << int(colour.g) << "," << int(colour.b);
  }
}

TEST(LinePlot, DefaultSizeIs1000By700) {
  TempDir dir;
  const PngSize size = png_size(render(codec_plot(), dir.file("default.png")));
  EXPECT_EQ(size.width, 1000u);
  EXPECT_EQ(size.height, 700u);
}

TEST(LinePlot, DifferentPlotsGiveDifferentFilesAndTheSamePlotTheSameFile) {
  TempDir dir;
  const LinePlot first = codec_plot();
  LinePlot second = codec_plot();
  second.series[0].ys[0] *= 3;
  LinePlot third = codec_plot();
  third.log_x = false;
  third.title = "Linear axes";

  // Other plots in between must leave no state behind (colours, page, stream).
  const Bytes a1 = render(first, dir.file("a1.png"));
  const Bytes b = render(second, dir.file("b.png"));
  const Bytes c = render(third, dir.file("c.png"));
  const Bytes a2 = render(first, dir.file("a2.png"));
  EXPECT_NE(a1, b);
  EXPECT_NE(a1, c);
  EXPECT_NE(b, c);
  EXPECT_EQ(a1, a2);
}

TEST(LinePlot, ManyCallsInOneProcessAllWork) {
  TempDir dir;
  const LinePlot plot = codec_plot();
  const Bytes first = render(plot, dir.file("first.png"));
  for (int i = 0; i < 20; ++i) {
    const std::string path = dir.file("again.png");  // overwritten each time
    ASSERT_TRUE(write_line_plot(plot, path).ok()) << "call " << i;
  }
  EXPECT_EQ(testing::read_bytes(dir.file("again.png")), first);
}

TEST(LinePlot, CallsFromSeveralThreadsTakeTurns) {
  TempDir dir;
  const LinePlot plot = codec_plot();
  const Bytes expected = render(plot, dir.file("expected.png"));
  std::vector<std::thread> threads;
  std::vector<Status> statuses(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      statuses[t] = write_line_plot(plot, dir.file("thread" + std::to_string(t) + ".png"));
    });
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) {
    ASSERT_TRUE(statuses[t].ok()) << statuses[t].to_string();
    EXPECT_EQ(testing::read_bytes(dir.file("thread" + std::to_string(t) + ".png")), expected);
  }
}

TEST(LinePlot, PrintsNothing) {
  TempDir dir;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const Status status = write_line_plot(codec_plot(), dir.file("quiet.png"));
  LinePlot crowded = codec_plot();
  for (int i = 0; i < 12; ++i)
    crowded.series.push_back({"a rather long configuration name number " + std::to_string(i),
                              {1, 2, 4},
                              {1.0 + i, 2.0 + i, 3.0 + i}});
  const Status crowded_status = write_line_plot(crowded, dir.file("crowded.png"));
  std::fflush(nullptr);
  const std::string out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(status.ok()) << status.to_string();
  EXPECT_TRUE(crowded_status.ok()) << crowded_status.to_string();
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "");
}

TEST(LinePlot, DrawsASinglePointAndAFlatLine) {
  TempDir dir;
  LinePlot single;
  single.series = {{"one run", {512}, {7.5}}};
  EXPECT_EQ(png_size(render(single, dir.file("single.png"))).width, 1000u);

  LinePlot flat;
  flat.log_y = true;
  flat.series = {{"flat", {1, 2, 3}, {4, 4, 4}}};
  EXPECT_EQ(png_size(render(flat, dir.file("flat.png"))).width, 1000u);
}

TEST(LinePlot, AZeroOnALogAxisIsAClearErrorAndWritesNothing) {
  TempDir dir;
  LinePlot plot = codec_plot();
  plot.series[2].xs[0] = 0;  // log x
  const std::string path = dir.file("never.png");
  const Status status = write_line_plot(plot, path);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("series 'lattice E8 #1': point 0 has x = 0"));
  EXPECT_THAT(status.message(), HasSubstr("logarithmic and needs values > 0"));
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_THAT(testing::read_bytes(path), IsEmpty());
}

TEST(LinePlot, AMissingDirectoryIsNotFoundNamingThePathAndLeavesNothing) {
  TempDir dir;
  const std::string path = dir.file("missing/plot.png");
  const Status status = write_line_plot(codec_plot(), path);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("PNG file '" + path + "'"));
  // The process goes on (PLplot would exit() on a file it cannot open itself).
  EXPECT_EQ(png_size(render(codec_plot(), dir.file("after.png"))).width, 1000u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.file("")),
                          std::filesystem::directory_iterator()),
            1);
}

TEST(LinePlot, ReplacesAnExistingFile) {
  TempDir dir;
  const std::string path = dir.write("plot.png", {'o', 'l', 'd'});
  const Bytes png = render(codec_plot(), path);
  EXPECT_EQ(png_size(png).width, 1000u);
}

}  // namespace
}  // namespace tessera::sweep
