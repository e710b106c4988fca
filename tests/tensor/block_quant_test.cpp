// The block formats as ggml lays them out: sizes, blocks written out by hand
// from the format's definition decode to the values it defines, and each
// type's round trip stays within its expected error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/tensor/block_quant.h"

namespace tessera {
namespace {

void put_half(std::vector<uint8_t>& bytes, std::size_t at, float value) {
  const uint16_t h = float_to_half(value);
  std::memcpy(bytes.data() + at, &h, 2);
}

TEST(BlockFormats, SizesAreGgmls) {
  EXPECT_EQ(dtype_row_bytes(DType::kF32, 64), 256u);
  EXPECT_EQ(dtype_row_bytes(DType::kF16, 64), 128u);
  EXPECT_EQ(dtype_row_bytes(DType::kBF16, 64), 128u);
  EXPECT_EQ(dtype_row_bytes(DType::kQ8_0, 64), 68u);
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_0, 64), 36u);
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_K, 512), 288u);
  EXPECT_EQ(dtype_row_bytes(DType::kQ6_K, 512), 420u);
  EXPECT_EQ(dtype_row_bytes(DType::kQ8_0, 33), 0u) << "not whole blocks";
  for (DType d : kAllDTypes) EXPECT_EQ(dtype_from_name(dtype_name(d)), d);
  EXPECT_FALSE(dtype_from_name("q5_1").has_value());
}

TEST(BlockFormats, Q8_0BlockDecodesAsDefined) {
  std::vector<uint8_t> block(34);
  put_half(block, 0, 0.5f);
  for (int i = 0; i < 32; ++i)
    block[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(i * 8 - 127));
  std::vector<float> x(32);
  dequantize_row(DType::kQ8_0, block.data(), 32, x.data());
  for (int i = 0; i < 32; ++i) EXPECT_EQ(x[i], 0.5f * static_cast<float>(i * 8 - 127)) << i;
}

TEST(BlockFormats, Q4_0BlockDecodesAsDefined) {
  std::vector<uint8_t> block(18);
  put_half(block, 0, 2.0f);
  // Byte j: element j in the low nibble, element j + 16 in the high one.
  for (int j = 0; j < 16; ++j) block[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<float> x(32);
  dequantize_row(DType::kQ4_0, block.data(), 32, x.data());
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(x[j], 2.0f * static_cast<float>(j - 8));
    EXPECT_EQ(x[j + 16], 2.0f * static_cast<float>(7 - j));
  }
}

TEST(BlockFormats, Q4_KBlockDecodesAsDefined) {
  // Sub-block s: x = d * sc[s] * q - dmin * m[s], 6-bit sc and m packed in
  // 12 bytes: sc[0..3] and m[0..3] in the low 6 bits of bytes 0..3 and 4..7;
  // sc[4..7] and m[4..7] as low nibbles in bytes 8..11 (sc low, m high) with
  // their top two bits in the top bits of bytes 0..3 (sc) and 4..7 (m).
  const int sc[8] = {1, 2, 3, 4, 5, 6, 7, 50};
  const int m[8] = {0, 2, 4, 6, 8, 40, 12, 14};
  std::vector<uint8_t> block(144);
  put_half(block, 0, 1.0f);
  put_half(block, 2, 0.5f);
  uint8_t* packed = block.data() + 4;
  for (int s = 0; s < 4; ++s) {
    packed[s] = static_cast<uint8_t>(sc[s] | ((sc[s + 4] >> 4) << 6));
    packed[s + 4] = static_cast<uint8_t>(m[s] | ((m[s + 4] >> 4) << 6));
    packed[s + 8] = static_cast<uint8_t>((sc[s + 4] & 0xF) | ((m[s + 4] & 0xF) << 4));
  }
  // Codes: element e has code e % 16. Bytes 32i..32i+31 hold sub-block 2i in
  // the low nibbles and 2i + 1 in the high ones.
  for (int i = 0; i < 4; ++i)
    for (int l = 0; l < 32; ++l)
      block[16 + 32 * i + l] =
          static_cast<uint8_t>(((64 * i + l) % 16) | (((64 * i + 32 + l) % 16) << 4));
  std::vector<float> x(256);
  dequantize_row(DType::kQ4_K, block.data(), 256, x.data());
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32;
    EXPECT_EQ(x[e], 1.0f * static_cast<float>(sc[s]) * static_cast<float>(e % 16) -
                        0.5f * static_cast<float>(m[s]))
        << e;
  }
}

TEST(BlockFormats, Q6_KBlockDecodesAsDefined) {
  // x = d * sc[e / 16] * (q - 32), q 6 bits: in each half of 128 elements,
  // e's low nibble sits in ql[e % 32 + 32 * ((e / 32) % 2)] (low nibble for
  // e % 128 < 64, high above), its top two bits in qh[e % 32] at bit
  // 2 * ((e % 128) / 32).
  std::vector<uint8_t> block(210, 0);
  uint8_t* ql = block.data();
  uint8_t* qh = block.data() + 128;
  auto* scales = reinterpret_cast<int8_t*>(block.data() + 192);
  put_half(block, 208, 0.25f);
  for (int i = 0; i < 16; ++i) scales[i] = static_cast<int8_t>(i - 8);
  const auto code = [](int e) { return (e * 7) % 64; };
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128, r = e % 128;
    uint8_t& low = ql[64 * half + r % 32 + 32 * ((r / 32) % 2)];
    low = static_cast<uint8_t>(low | ((code(e) & 0xF) << (r >= 64 ? 4 : 0)));
    uint8_t& high = qh[32 * half + r % 32];
    high = static_cast<uint8_t>(high | ((code(e) >> 4) << (2 * (r / 32))));
  }
  std::vector<float> x(256);
  dequantize_row(DType::kQ6_K, block.data(), 256, x.data());
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(x[e], 0.25f * static_cast<float>(e / 16 - 8) * static_cast<float>(code(e) - 32)) << e;
}

// Relative RMS error of one quantize/dequantize round trip of Gaussian rows.
double round_trip_error(DType dtype, int64_t n) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<std::size_t>(n)), back(x.size());
  for (float& v : x) v = normal(rng);
  std::vector<uint8_t> bytes(dtype_row_bytes(dtype, n));
  quantize_row(dtype, x.data(), n, bytes.data());
  dequantize_row(dtype, bytes.data(), n, back.data());
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    err += (x[i] - back[i]) * static_cast<double>(x[i] - back[i]);
    norm += x[i] * static_cast<double>(x[i]);
  }
  return std::sqrt(err / norm);
}

TEST(BlockFormats, RoundTripErrorPerType) {
  const int64_t n = 256 * 64;
  // Bits per weight 4.5 (q4_0, q4_K), 6.56 (q6_K), 8.5 (q8_0): a uniform
  // quantizer's error halves per bit; the bounds hold with a margin.
  EXPECT_LT(round_trip_error(DType::kF16, n), 5e-4);
  EXPECT_LT(round_trip_error(DType::kBF16, n), 4e-3);
  EXPECT_LT(round_trip_error(DType::kQ8_0, n), 0.01);
  EXPECT_LT(round_trip_error(DType::kQ6_K, n), 0.04);
  EXPECT_LT(round_trip_error(DType::kQ4_K, n), 0.15);
  EXPECT_LT(round_trip_error(DType::kQ4_0, n), 0.15);
  EXPECT_LT(round_trip_error(DType::kQ6_K, n), round_trip_error(DType::kQ4_K, n) / 3);
}

TEST(BlockFormats, ZeroRowsStayZeroAndExtremesAreExact) {
  for (DType dtype : kAllDTypes) {
    const int64_t n = 256;
    std::vector<float> x(n, 0.0f), back(n, 1.0f);
    std::vector<uint8_t> bytes(dtype_row_bytes(dtype, n));
    quantize_row(dtype, x.data(), n, bytes.data());
    dequantize_row(dtype, bytes.data(), n, back.data());
    for (float v : back) ASSERT_EQ(v, 0.0f) << dtype_name(dtype);
  }
  // q8_0 and q4_0 map each block's extreme onto a code exactly (up to the
  // fp16 scale).
  std::vector<float> x(32, 0.25f);
  x[3] = -4.0f;
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0}) {
    std::vector<uint8_t> bytes(dtype_row_bytes(dtype, 32));
    std::vector<float> back(32);
    quantize_row(dtype, x.data(), 32, bytes.data());
    dequantize_row(dtype, bytes.data(), 32, back.data());
    EXPECT_NEAR(back[3], -4.0f, 4e-3) << dtype_name(dtype);
  }
}

TEST(BlockFormats, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + 1.0f / 256), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(float_to_bf16(-INFINITY), 0xff80);
}

}  // namespace
}  // namespace tessera
