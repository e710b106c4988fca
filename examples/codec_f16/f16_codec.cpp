// Stores each K/V element as an IEEE 754 half float: 16 bits instead of 32,
// with a relative rounding error below 2^-11 for values in the normal range.
// Select it with:  [cache.codec] plugin = "example_f16"
// Its one option:  [cache.codec] saturate = false  (default true)
#include <algorithm>
#include <cstring>

#include "core/plugin/sdk.h"
#include "core/tensor/dtype.h"

namespace {

constexpr float kHalfMax = 65504.0f;  // the largest finite half

// The schema the core checks [cache.codec] keys against before create().
constexpr tessera::OptionSpec kOptions[] = {
    {"saturate", tessera::OptionType::kBool, "true",
     "clamp values beyond +-65504 to the largest finite half instead of storing "
     "+-inf (an inf key turns attention scores into NaN)"}};

class F16Codec final : public tessera::Compressor {
 public:
  explicit F16Codec(const tessera::OptionValues& options)
      : saturate_(options.get_bool("saturate")) {}

  std::size_t encoded_bytes(int64_t n_vectors, int head_dim) const override {
    return static_cast<std::size_t>(n_vectors) * static_cast<std::size_t>(head_dim) * 2;
  }
  double bits_per_vector(int head_dim) const override { return 16.0 * head_dim; }

  void encode(const float* src, int64_t n_vectors, int head_dim, uint8_t* dst) const override {
    const int64_t n = n_vectors * head_dim;
    for (int64_t i = 0; i < n; ++i) {
      const float x = saturate_ ? std::clamp(src[i], -kHalfMax, kHalfMax) : src[i];
      const uint16_t h = tessera::float_to_half(x);
      std::memcpy(dst + 2 * i, &h, 2);  // dst has no alignment guarantee
    }
  }
  void decode(const uint8_t* src, int64_t n_vectors, int head_dim, float* dst) const override {
    const int64_t n = n_vectors * head_dim;
    for (int64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = tessera::half_to_float(h);
    }
  }

 private:
  bool saturate_;
};

}  // namespace

TESSERA_PLUGIN(compressor, "example_f16", "1.0.0",
               "stores K/V as IEEE half floats (example plugin)", kOptions, F16Codec)
