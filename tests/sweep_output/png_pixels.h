// Reads back the pixels of the PNGs the plot tests write (8-bit RGB or RGBA,
// not interlaced, as cairo writes them), so a test can check what a person
// would see: a white page, dark axes and text, each series' colour.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace tessera::testing {

struct Rgb8 {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb8&) const = default;
};

struct PngPixels {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<Rgb8> pixels;  // row by row; empty when the file is not one we read
  Rgb8 at(uint32_t x, uint32_t y) const { return pixels[std::size_t{y} * width + x]; }
};

inline uint32_t png_u32(const std::vector<uint8_t>& b, std::size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
         uint32_t{b[at + 3]};
}

inline uint8_t paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return static_cast<uint8_t>(pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
}

inline PngPixels read_png_pixels(const std::vector<uint8_t>& png) {
  PngPixels out;
  std::vector<uint8_t> compressed;
  int channels = 0;
  for (std::size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = png_u32(png, at);
    const std::string type(png.begin() + at + 4, png.begin() + at + 8);
    if (at + 12 + length > png.size()) return {};
    const uint8_t* data = png.data() + at + 8;
    if (type == "IHDR") {
      out.width = png_u32(png, at + 8);
      out.height = png_u32(png, at + 12);
      const uint8_t depth = data[8], colour_type = data[9], interlace = data[12];
      if (depth != 8 || interlace != 0 || (colour_type != 2 && colour_type != 6)) return {};
      channels = colour_type == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      compressed.insert(compressed.end(), data, data + length);
    }
    at += 12 + length;
  }
  if (channels == 0) return {};
  const std::size_t stride = std::size_t{out.width} * channels;
  std::vector<uint8_t> raw((stride + 1) * out.height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, compressed.data(), compressed.size()) != Z_OK ||
      raw_size != raw.size())
    return {};
  // Undo the per-row filters (PNG spec, section 9).
  std::vector<uint8_t> previous(stride, 0), row(stride);
  for (uint32_t y = 0; y < out.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    for (std::size_t i = 0; i < stride; ++i) {
      const int a = i >= std::size_t(channels) ? row[i - channels] : 0;
      const int b = previous[i];
      const int c = i >= std::size_t(channels) ? previous[i - channels] : 0;
      const int predictor = filter == 1   ? a
                            : filter == 2 ? b
                            : filter == 3 ? (a + b) / 2
                            : filter == 4 ? paeth(a, b, c)
                                          : 0;
      row[i] = static_cast<uint8_t>(in[i] + predictor);
    }
    for (uint32_t x = 0; x < out.width; ++x)
      out.pixels.push_back({row[x * channels], row[x * channels + 1], row[x * channels + 2]});
    previous = row;
  }
  return out;
}

}  // namespace tessera::testing
