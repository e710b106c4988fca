#include "plugins/compressor_identity/identity_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace tessera {
namespace {

TEST(IdentityCodec, RoundTripIsBitExact) {
  const IdentityCodec codec;
  const int head_dim = 4;
  const std::vector<float> src = {0.0f,
                                  -0.0f,
                                  1.0f / 3,
                                  -1e-40f,  // denormal
                                  std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::max(),
                                  std::numeric_limits<float>::quiet_NaN(),
                                  12345.678f};
  std::vector<uint8_t> bytes(codec.encoded_bytes(2, head_dim), 0xAB);
  ASSERT_EQ(bytes.size(), 32u);
  codec.encode(src.data(), 2, head_dim, bytes.data());
  EXPECT_EQ(std::memcmp(bytes.data(), src.data(), bytes.size()), 0);  // the floats themselves
  std::vector<float> back(src.size(), 7.0f);
  codec.decode(bytes.data(), 2, head_dim, back.data());
  EXPECT_EQ(std::memcmp(back.data(), src.data(), bytes.size()), 0);
}

TEST(IdentityCodec, ReportsItsSize) {
  const IdentityCodec codec;
  EXPECT_EQ(codec.encoded_bytes(1, 64), 256u);
  EXPECT_EQ(codec.encoded_bytes(10, 128), 5120u);
  EXPECT_EQ(codec.encoded_bytes(0, 128), 0u);
  EXPECT_DOUBLE_EQ(codec.bits_per_vector(64), 2048.0);
  EXPECT_TRUE(codec.stores_raw_f32());
}

TEST(IdentityCodec, ZeroVectorsTouchNothing) {
  const IdentityCodec codec;
  // Null buffers are fine for zero vectors (nothing may be read or written)...
  codec.encode(nullptr, 0, 64, nullptr);
  codec.decode(nullptr, 0, 64, nullptr);
  // ...and real ones come back untouched, canaries and all.
  const std::vector<float> src(64, 1.5f);
  std::vector<uint8_t> bytes(256, 0xAB);
  codec.encode(src.data(), 0, 64, bytes.data());
  EXPECT_EQ(bytes, std::vector<uint8_t>(256, 0xAB));
  std::vector<float> out(64, -2.0f);
  codec.decode(bytes.data(), 0, 64, out.data());
  EXPECT_EQ(out, std::vector<float>(64, -2.0f));
}

}  // namespace
}  // namespace tessera
